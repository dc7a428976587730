/**
 * The credential tests of the HTTP credentials (Telegram Bot API, LLM, embeddings): one GET with a
 * 10-second limit after the base URL check, never following a redirect (a 3xx is reported: fetch would
 * pass a custom key header on to another host). The result message names the credential field for a bad
 * URL, gives the HTTP status (and the server's short description) for a refusal, or the network failure,
 * always with the credential's secrets redacted.
 */
import type { INodeCredentialTestResult } from 'n8n-workflow';
import { baseUrlMessage, baseUrlProblem, type UrlField } from './credentialUrl';
import { REDIRECT_HINT, type Redactor } from './redact';

/** How long a credential test waits for the server (ms). */
export const CREDENTIAL_TEST_TIMEOUT_MS = 10_000;

/** Telegram's `description`, OpenAI's `error.message`, Gemini's `error.message`, or nothing. */
function describe(body: unknown): string | null {
	const b = body as { description?: unknown; error?: { message?: unknown } | unknown } | null;
	if (typeof b?.description === 'string') return b.description;
	const error = b?.error as { message?: unknown } | string | undefined;
	if (typeof error === 'string') return error;
	if (typeof error?.message === 'string') return error.message;
	return null;
}

/**
 * @param baseUrl the credential's base URL (checked first)
 * @param path what to GET under it, e.g. `/bot<token>/getMe` (may carry the secret: never reported)
 * @returns OK with `okMessage`, or Error with a redacted reason
 */
export async function probeCredential(
	baseUrl: unknown,
	field: UrlField,
	path: string,
	headers: Record<string, string>,
	redact: Redactor,
	okMessage: string,
): Promise<INodeCredentialTestResult> {
	const problem = baseUrlProblem(baseUrl);
	if (problem) return { status: 'Error', message: baseUrlMessage(problem, field) };
	const url = `${(baseUrl as string).replace(/\/+$/, '')}${path}`;
	try {
		const res = await fetch(url, {
			headers,
			redirect: 'manual',
			signal: AbortSignal.timeout(CREDENTIAL_TEST_TIMEOUT_MS),
		});
		const text = await res.text();
		if (res.ok) return { status: 'OK', message: okMessage };
		let told: string | null = null;
		try {
			told = describe(JSON.parse(text));
		} catch {
			// not JSON: the status alone
		}
		// Redacted before it is cut to 300 characters, so no part of a secret is left at the cut.
		const quoted = told ? ` ${redact.string(told).slice(0, 300)}` : '';
		const hint = res.status >= 300 && res.status < 400 ? REDIRECT_HINT : '';
		return {
			status: 'Error',
			message: redact.string(`${field.credential}: the server answered HTTP ${res.status}${quoted}${hint}`),
		};
	} catch (error) {
		const cause = (error as { cause?: unknown }).cause;
		const detail = cause instanceof Error ? ` (${cause.message})` : '';
		return {
			status: 'Error',
			message: redact.string(
				`${field.credential}: no answer: ${error instanceof Error ? error.message : String(error)}${detail}`,
			),
		};
	}
}
