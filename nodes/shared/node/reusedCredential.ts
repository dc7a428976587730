/**
 * A credential read through n8n at most once per CREDENTIAL_CACHE_TTL_MS (5 s) per (workflow id, credential type,
 * credential id) in this process, for a node whose Options → Reuse Credential for 5 Seconds is on
 * (properties.ts reuseCredentialOption; the PostgreSQL credential's pool is reused the same way by
 * ../postgres/executionPool.ts). n8n's getCredentials queries its own database, decrypts and resolves the
 * credential on every call: a few milliseconds per node call (issue 29 P7: Pipeline Capture's Generate reads
 * the model credential on every step).
 *  - the key includes the workflow, so a workflow never receives a credential n8n did not give it (n8n's access
 *    check ran for that workflow within the TTL); an edited or revoked credential applies within the TTL;
 *  - only for static credentials: one whose fields use expressions, or that n8n resolves per caller, must leave
 *    the option off (each execution would get the first one's values);
 *  - each n8n process (main, every queue-mode worker) keeps its own entries; nothing is shared.
 */
import type { ICredentialDataDecryptedObject, IExecuteFunctions, INode } from 'n8n-workflow';
import { CREDENTIAL_CACHE_TTL_MS } from '../postgres/executionPool';

/** Most entries kept (the oldest is dropped beyond it). */
const MAX_ENTRIES = 1_000;

const entries = new Map<string, { credential: ICredentialDataDecryptedObject; expires: number }>();

/**
 * The node's credential of `type` for item `itemIndex`: from this process's entry when `reuse` is on and one
 * younger than 5 s exists for this workflow and credential id, else read through n8n (and kept when `reuse`).
 * Without a workflow id or a credential id on the node nothing is kept. The object is n8n's; callers must not
 * change it.
 * @param node the execution's `getNode()` (its `credentials[type].id` names the credential)
 * @param now the clock, ms (tests)
 * @throws whatever n8n's getCredentials throws (no credential set, no access)
 */
export async function reusedCredential(
	fn: IExecuteFunctions,
	type: string,
	itemIndex: number,
	opts: { node: INode; reuse: boolean; now?: number },
): Promise<ICredentialDataDecryptedObject> {
	const now = opts.now ?? Date.now();
	// expired entries go at the next call (oldest first: an entry is re-inserted when refreshed), so a rotated
	// or revoked secret is not kept in the heap once its 5 s are over
	for (const [k, entry] of entries) {
		if (entry.expires > now) break;
		entries.delete(k);
	}
	const credentialId = opts.node.credentials?.[type]?.id;
	const workflowId = fn.getWorkflow?.()?.id;
	const key = opts.reuse && credentialId && workflowId ? [workflowId, type, credentialId].join('\u0000') : undefined;
	const hit = key ? entries.get(key) : undefined;
	if (hit && hit.expires > now) return hit.credential;
	const credential = await fn.getCredentials(type, itemIndex);
	if (key) {
		entries.delete(key);
		entries.set(key, { credential, expires: now + CREDENTIAL_CACHE_TTL_MS });
		if (entries.size > MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
	}
	return credential;
}

/** Forgets every kept credential (tests). */
export function clearReusedCredentials(): void {
	entries.clear();
}
