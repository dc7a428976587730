/** Telegram Ingest's options as read without n8n's type checks (TelegramIngest.node.ts reads them as stored). */
import { ContractError } from '../../shared/errors';

/**
 * Options → Max Attempts as read without n8n's type checks (a hand-edited workflow may hold anything).
 * @throws ContractError 500 validation (a node configuration error, not the update's: nothing is stored)
 */
export function maxAttemptsOf(value: unknown): number {
	if (value === undefined) return 5;
	if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 2_147_483_647) return value;
	throw ContractError.configuration('Telegram Ingest option Max Attempts must be an integer from 1 to 2147483647', {
		code: 'NODE_CONFIGURATION',
		field: 'options.maxAttempts',
	});
}
