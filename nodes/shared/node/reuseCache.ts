/**
 * What a node read through n8n, kept per (workflow id, credential type, credential id) for a short time in this
 * process: the one mechanism behind Reuse Credential for 5 Seconds (../postgres/executionPool.ts keeps the
 * credential's pool, ./reusedCredential.ts the credential itself). Entries expire after `ttlMs` and are dropped at
 * the next lookup (oldest first: a refreshed entry is re-inserted), so a rotated or revoked secret is not kept once
 * its time is over; beyond `max` entries the oldest goes. Each n8n process keeps its own.
 */
import type { IExecuteFunctions, INode } from 'n8n-workflow';

/** How long (ms) Reuse Credential keeps what it read through n8n: 5 s. */
export const REUSE_TTL_MS = 5_000;

/**
 * The reuse key of `node`'s credential of `type` in this execution's workflow, or undefined — nothing is kept —
 * when `reuse` is off or the node has no credential id or the workflow no id (e.g. a test context). The workflow
 * is part of the key, so a workflow never receives a credential n8n did not give it (n8n's access check ran for
 * that workflow within the time an entry lives).
 */
export function reuseKey(fn: IExecuteFunctions, node: INode, type: string, reuse: boolean): string | undefined {
	const credentialId = node.credentials?.[type]?.id;
	const workflowId = fn.getWorkflow?.()?.id;
	return reuse && credentialId && workflowId ? [workflowId, type, credentialId].join('\u0000') : undefined;
}

/** Values kept per reuse key for `ttlMs` (ms), at most `max` of them. */
export class ReuseCache<T> {
	private readonly entries = new Map<string, { value: T; expires: number }>();

	constructor(
		private readonly ttlMs: number,
		private readonly max = 1_000,
	) {}

	/**
	 * The value kept under `key` while younger than ttlMs at `now` (ms), else `load()`'s, kept under `key`
	 * (no key: loaded, never kept). @throws whatever `load` throws (nothing is kept then)
	 */
	async get(key: string | undefined, now: number, load: () => Promise<T>): Promise<T> {
		for (const [k, entry] of this.entries) {
			if (entry.expires > now) break;
			this.entries.delete(k);
		}
		const hit = key ? this.entries.get(key) : undefined;
		if (hit && hit.expires > now) return hit.value;
		const value = await load();
		if (key) {
			this.entries.delete(key);
			this.entries.set(key, { value, expires: now + this.ttlMs });
			if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
		}
		return value;
	}

	/** Forgets every entry (tests). */
	clear(): void {
		this.entries.clear();
	}
}
