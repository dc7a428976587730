/** Resources and their operations (one file per operation under ./<resource>/). */
import { archive } from './atom/archive.operation';
import { lock } from './atom/lock.operation';
import { unlock } from './atom/unlock.operation';
import { unlockExpired } from './atom/unlockExpired.operation';
import { createBaseline } from './baseline/create.operation';
import { loadContext } from './analysis/loadContext.operation';
import { saveError } from './analysis/saveError.operation';
import { saveResult } from './analysis/saveResult.operation';
import { createProposal } from './proposal/create.operation';
import { mergeProposal } from './proposal/merge.operation';
import { rejectProposal } from './proposal/reject.operation';
import type { Resource } from '../../shared/node/router';
import type { Operation } from './types';

export const RESOURCES: Resource<Operation>[] = [
	{ value: 'atom', name: 'Atom', operations: [lock, unlock, archive, unlockExpired] },
	{ value: 'proposal', name: 'Proposal', operations: [createProposal, rejectProposal, mergeProposal] },
	{ value: 'baseline', name: 'Baseline', operations: [createBaseline] },
	{ value: 'analysis', name: 'Analysis', operations: [loadContext, saveResult, saveError] },
];
