/**
 * Credential tests of the Knowledge Bot's HTTP credentials (registered as `contractsTelegramApiTest` and
 * `contractsEmbeddingsApiTest`): the base URL is checked (http(s), no whitespace, no user info), then
 * Telegram's `getMe` or the embeddings endpoint's model list is asked for. Failure messages never carry
 * the token or the key (../../shared/credentialProbe.ts).
 */
import type { ICredentialTestFunctions, ICredentialsDecrypted, INodeCredentialTestResult } from 'n8n-workflow';
import { probeCredential } from '../../shared/credentialProbe';
import { redactorFor } from '../../shared/redact';
import { TELEGRAM_BASE_URL, type TelegramCredential } from './botApi';
import { EMBEDDINGS_BASE_URL, type EmbeddingsCredential } from './embeddings';

/** Contracts Telegram Bot API: `GET <baseUrl>/bot<token>/getMe`. */
export async function contractsTelegramApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const data = (credential.data ?? {}) as unknown as TelegramCredential;
	const token = String(data.accessToken ?? '');
	const base =
		data.baseUrl === undefined || data.baseUrl === null || data.baseUrl === ''
			? 'https://api.telegram.org'
			: data.baseUrl;
	return probeCredential(
		base,
		TELEGRAM_BASE_URL,
		`/bot${token}/getMe`,
		{},
		redactorFor([token]),
		'Connected: getMe answered',
	);
}

/** Contracts Embeddings API: `GET /v1beta/models` (key in x-goog-api-key) or `GET /v1/models` (Bearer). */
export async function contractsEmbeddingsApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const data = (credential.data ?? {}) as unknown as EmbeddingsCredential;
	const key = data.apiKey ? String(data.apiKey) : '';
	const gemini = data.api !== 'openai';
	const headers: Record<string, string> = key
		? gemini
			? { 'x-goog-api-key': key }
			: { authorization: `Bearer ${key}` }
		: {};
	return probeCredential(
		data.baseUrl,
		EMBEDDINGS_BASE_URL,
		gemini ? '/v1beta/models' : '/v1/models',
		headers,
		redactorFor([key]),
		'Connected: the model list answered',
	);
}
