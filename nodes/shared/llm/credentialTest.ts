/**
 * Credential test of the Contracts LLM API credential (registered as `contractsLlmApiTest`): the base
 * URL is checked (http(s), no whitespace, no user info), then the model list is asked for
 * (`GET /v1/models` with the Bearer key, Gemini's `GET /v1beta/openai/models`, or Ollama's `GET /api/tags`). Messages never carry the key.
 */
import type { ICredentialTestFunctions, ICredentialsDecrypted, INodeCredentialTestResult } from 'n8n-workflow';
import { probeCredential } from '../credentialProbe';
import { redactorFor } from '../redact';
import { LLM_BASE_URL, MODEL_LIST_PATHS, type LlmCredential } from './generate';

/**
 * n8n credential test of Contracts LLM API: the base URL check, then `GET /v1/models` (Bearer key) or, for
 * Ollama, `GET /api/tags`, without following redirects. Never throws: `{ status: 'OK' | 'Error', message }`,
 * the key redacted from every message.
 */
export async function contractsLlmApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const data = (credential.data ?? {}) as unknown as LlmCredential;
	const key = data.apiKey ? String(data.apiKey) : '';
	const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
	return probeCredential(
		data.baseUrl,
		LLM_BASE_URL,
		MODEL_LIST_PATHS[data.api] ?? MODEL_LIST_PATHS.openai,
		headers,
		redactorFor([key]),
		'Connected: the model list answered',
	);
}
