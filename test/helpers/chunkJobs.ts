/**
 * Queued document_chunk jobs for WF90/WF40 runs (queue-mode e2e tests, the queue bench).
 */
import type { Pool } from 'pg';

/**
 * Inserts `count` extracted documents (doc_type url, source_key `url:<tag>-<n>`, chat -100, visibility
 * group, status done) of `tenantId`, each with the same text of `chars` characters (numbered sentences),
 * and one queued document_chunk job per document (dedup_key `chunk:<source_key>`). Returns the job ids.
 * @throws the pg error when a source_key or dedup_key of `tag` exists already
 */
export async function queueChunkJobs(
	pool: Pool,
	tenantId: string,
	count: number,
	chars: number,
	tag: string,
): Promise<number[]> {
	const text = Array.from({ length: Math.ceil(chars / 30) }, (_, i) => `sentence ${i} about queues. `)
		.join('')
		.slice(0, chars)
		.trimEnd();
	const { rows } = await pool.query(
		`WITH d AS (
		   INSERT INTO content.documents (tenant_id, doc_type, source_key, chat_id, visibility, text, status)
		   SELECT $1, 'url', $2 || g, -100, 'group', $3, 'done' FROM generate_series(1, $4::int) g RETURNING id, source_key)
		 INSERT INTO ops.jobs (tenant_id, job_type, payload, dedup_key)
		 SELECT $1, 'document_chunk', jsonb_build_object('tenant_id', $1::text, 'document_id', d.id), 'chunk:' || d.source_key FROM d
		 RETURNING id`,
		[tenantId, `url:${tag}-`, text, count],
	);
	return rows.map((r) => Number(r.id));
}
