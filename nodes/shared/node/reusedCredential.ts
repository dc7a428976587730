/**
 * A credential read through n8n at most once per REUSE_TTL_MS (5 s) per (workflow id, credential type,
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
import { REUSE_TTL_MS, ReuseCache, reuseKey } from './reuseCache';

const credentials = new ReuseCache<ICredentialDataDecryptedObject>(REUSE_TTL_MS);

/**
 * The node's credential of `type` for item `itemIndex`: from this process's entry when `reuse` is on and one
 * younger than 5 s exists for this workflow and credential id, else read through n8n (and kept when `reuse`).
 * Without a workflow id or a credential id on the node nothing is kept; expired entries are dropped at the next
 * call (./reuseCache.ts). The object is n8n's; callers must not change it.
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
	return credentials.get(reuseKey(fn, opts.node, type, opts.reuse), opts.now ?? Date.now(), () =>
		fn.getCredentials(type, itemIndex),
	);
}

/** Forgets every kept credential (tests). */
export function clearReusedCredentials(): void {
	credentials.clear();
}
