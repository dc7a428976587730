/** The success results of the ArangoCAS operations (`data` of the SuccessEnvelope, ./types.ts). */
import type { OperationResult } from './types';

/**
 * The result of an operation that succeeded: `data` is `{ success: true, ...facts }` (the seed's
 * success bodies: `success` first, then the operation's facts in their order).
 * @param statusCode 200, or 201 when the operation created something
 */
export function succeeded(
	facts: Record<string, unknown>,
	statusCode: OperationResult['statusCode'] = 200,
): OperationResult {
	return { statusCode, data: { success: true, ...facts } };
}
