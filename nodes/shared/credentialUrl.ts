/**
 * Validation of a credential's base URL (Telegram Bot API, LLM, embeddings, ArangoDB), both in the
 * credential test and at every use, before any request is built from it: it must parse as a URL, use
 * `http:` or `https:`, contain no whitespace and no user name or password. The message names the
 * credential and the field and never quotes the value (a token pasted into the wrong field stays hidden).
 */
import { ContractError } from './errors';

/** Which credential field is checked: `credential` and `field` as shown in n8n, `name` the field's key. */
export interface UrlField {
	/** Display name of the credential type, e.g. "Contracts Telegram Bot API". */
	credential: string;
	/** Display name of the field, e.g. "Base URL". */
	field: string;
	/** Key of the field, e.g. `baseUrl`. */
	name: string;
	/** A valid example shown in the message. */
	example: string;
}

/** Why a base URL is refused (null when it is fine). Never contains the value. */
export function baseUrlProblem(value: unknown): string | null {
	if (typeof value !== 'string' || value.trim() === '') return 'is empty';
	if (/\s/.test(value)) return 'contains whitespace';
	const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value);
	if (!scheme || !/^[a-z][a-z0-9+.-]*:\/\//i.test(value))
		return 'has no scheme (it must start with http:// or https://)';
	if (!['http', 'https'].includes(scheme[1].toLowerCase())) return 'must use http:// or https://';
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		return 'is not a valid URL';
	}
	if (!url.hostname) return 'has no host';
	if (url.username || url.password) return "must not contain a user name or password (use the credential's own fields)";
	return null;
}

/**
 * The base URL without trailing slashes.
 * @throws ContractError 500 `validation`, not retryable, details `{ code: "BAD_CREDENTIAL_URL", credential_field }`
 */
export function checkedBaseUrl(value: unknown, field: UrlField): string {
	const problem = baseUrlProblem(value);
	if (problem)
		throw ContractError.configuration(baseUrlMessage(problem, field), {
			code: 'BAD_CREDENTIAL_URL',
			credential_field: field.name,
		});
	return (value as string).replace(/\/+$/, '');
}

/** The message of a refused base URL: `<credential> credential: <field> (<name>) <problem>, e.g. <example>`. */
export function baseUrlMessage(problem: string, field: UrlField): string {
	return `${field.credential} credential: ${field.field} (${field.name}) ${problem}, e.g. ${field.example}`;
}
