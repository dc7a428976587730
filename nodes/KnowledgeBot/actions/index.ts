/** Resources and their operations (one file per operation under ./update, ./url, ./document, …). */
import { chunkOperation } from './document/chunk.operation';
import { embedOperation } from './document/embed.operation';
import { extractOperation } from './document/extract.operation';
import { downloadOperation } from './file/download.operation';
import { answerOperation } from './qa/answer.operation';
import { upsertSessionOperation } from './qa/upsertSession.operation';
import { pruneOperation } from './retention/prune.operation';
import { checkOperation } from './botTransport/check.operation';
import type { ResourceSpec } from '../../shared/node/resources';
import type { Resource } from '../../shared/node/router';
import type { KnowledgeOperation } from './types';
import { processOperation } from './update/process.operation';
import { fetchOperation } from './url/fetch.operation';
import { normalizeOperation } from './url/normalize.operation';

/**
 * The Resource dropdown, in order. Bot Transport (WF11's watchdog) is 'botTransport'; releases before
 * issue 16 saved it as 'transport' — that value still runs the same operation (`formerValues`, routed by
 * `withFormerValues` in ../KnowledgeBot.node.ts), so a workflow saved then keeps working.
 */
export const KNOWLEDGE_RESOURCES: Array<Resource<KnowledgeOperation> & Pick<ResourceSpec, 'formerValues'>> = [
	{ value: 'update', name: 'Telegram Update', operations: [processOperation] },
	{ value: 'url', name: 'URL', operations: [normalizeOperation, fetchOperation] },
	{ value: 'file', name: 'Telegram File', operations: [downloadOperation] },
	{ value: 'document', name: 'Document', operations: [extractOperation, chunkOperation, embedOperation] },
	{ value: 'qa', name: 'Q&A', operations: [answerOperation, upsertSessionOperation] },
	{ value: 'retention', name: 'Retention', operations: [pruneOperation] },
	{ value: 'botTransport', name: 'Bot Transport', formerValues: ['transport'], operations: [checkOperation] },
];
