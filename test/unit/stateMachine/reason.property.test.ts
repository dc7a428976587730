/**
 * Property-based (fast-check, seed printed): a processor failure's reason, whatever the sub-workflow threw or
 * answered, is text PostgreSQL can store (no NUL, no lone surrogate: shared/sanitize.ts unstorablePath) and
 * at most MAX_REASON_LENGTH characters — it ends in the run's error and in ops.errors (issue 13).
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import fc from 'fast-check';
import { MAX_REASON_LENGTH } from '../../../nodes/shared/stateMachine/engine';
import { runTransitionProcessors, type TransitionDefinition } from '../../../nodes/shared/stateMachine';
import { unstorablePath } from '../../../nodes/shared/sanitize';
import { hostileString, propertyParams } from '../../helpers/property';

const transition = (mode: string) =>
	({
		name: 'GO',
		next: 'B',
		manual: true,
		disabled: false,
		processors: [{ type: 'EXTERNAL', name: 'p', executionMode: mode, config: {} }],
	}) as unknown as TransitionDefinition;

test('property: failure reasons and warnings are storable and bounded, whatever the processor said', async () => {
	await fc.assert(
		fc.asyncProperty(
			fc.oneof(hostileString(64), fc.string({ unit: 'binary', minLength: 900, maxLength: 3000 })),
			fc.boolean(),
			fc.constantFrom('SYNC', 'ASYNC_NEW_TX'),
			async (text, thrown, mode) => {
				const result = await runTransitionProcessors(
					'A',
					transition(mode),
					{},
					{
						runProcessor: async () => {
							if (thrown) throw new Error(text);
							return { success: false, error: text };
						},
					},
				);
				const reasons = mode === 'SYNC' ? [result.reason ?? ''] : result.warnings;
				assert.equal(reasons.length, 1);
				for (const reason of reasons) {
					assert.equal(unstorablePath(reason), null);
					assert.ok(reason.length <= MAX_REASON_LENGTH);
				}
			},
		),
		propertyParams('processor failure reason'),
	);
});
