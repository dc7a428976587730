/**
 * The pool of a node's PostgresContractsApi credential for hot paths (issue 14: Telegram Ingest runs once
 * per webhook call). `getCredentials` costs a query of n8n's own database plus a decryption on every
 * execution, and `getPool` hashes the credential; here both are done at most once per
 * `CREDENTIAL_CACHE_TTL_MS` (5 s) per (workflow id, credential id), in this process (../node/reuseCache.ts):
 *  - the key includes the workflow, so a workflow never receives a credential n8n did not give it (n8n's
 *    access check ran for that workflow within the TTL);
 *  - an edited credential (new password, host) or a revoked access takes effect within the TTL;
 *  - the pool itself is still getPool's (shared, closed after 5 minutes unused; each refresh marks it used).
 * A node without a credential id or a workflow id (e.g. a test context) is never cached, nor a call with
 * `reuse: false` (Telegram Ingest's default: a credential whose fields use expressions, or one n8n resolves
 * per caller, differs between executions, and a cached one would hand the first execution's values to the
 * next — the node's Reuse Credential option is for static credentials only).
 */
import type { IExecuteFunctions, INode } from 'n8n-workflow';
import type { Pool } from 'pg';
import { REUSE_TTL_MS, ReuseCache, reuseKey } from '../node/reuseCache';
import { getPool, type PostgresCredential } from './pool';

/** Longest time (ms) a credential read through n8n is reused, per workflow and credential. */
export const CREDENTIAL_CACHE_TTL_MS = REUSE_TTL_MS;

const pools = new ReuseCache<Pool>(CREDENTIAL_CACHE_TTL_MS);

/**
 * The pool of the node's `postgresContractsApi` credential. `opts.node`: the execution's `getNode()`, when
 * the caller has it already (saves a deep copy); `opts.now`: the clock (tests); `opts.reuse`: cache (default
 * true for direct callers; Telegram Ingest passes its Reuse Credential option).
 * @throws whatever getCredentials / getPool throw (ContractError 500 validation for a bad credential field)
 */
export async function executionPool(
	fn: IExecuteFunctions,
	opts: { node?: INode; now?: number; reuse?: boolean } = {},
): Promise<Pool> {
	const key = reuseKey(fn, opts.node ?? fn.getNode(), 'postgresContractsApi', opts.reuse !== false);
	return pools.get(key, opts.now ?? Date.now(), async () =>
		getPool((await fn.getCredentials('postgresContractsApi')) as unknown as PostgresCredential),
	);
}

/** Forgets every cached entry (tests). */
export function clearExecutionPools(): void {
	pools.clear();
}
