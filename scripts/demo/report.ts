/**
 * The demo's counts after the Telegram scenario: jobs per stage (ops.jobs), rows per table, the documents with
 * their chunks (content.documents) and the recorded errors (ops.errors), printed from the demo database.
 */
import type { Client } from 'pg';
import { STAGE } from './settings';

/** Prints per-stage job counts, rows per table, content.documents and ops.errors of the demo database `db`. */
export async function printCounts(db: Client) {
	const stages = await db.query(`SELECT job_type, count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
		count(*) FILTER (WHERE status IN ('failed', 'dead'))::int AS failed, count(*) FILTER (WHERE status IN ('queued', 'running'))::int AS waiting
		FROM ops.jobs GROUP BY 1 ORDER BY min(id)`);
	console.log('\nper stage (ops.jobs):            succeeded  failed  waiting');
	for (const r of stages.rows)
		console.log(
			`  ${String(STAGE[r.job_type] ?? r.job_type).padEnd(30)} ${String(r.succeeded).padStart(9)} ${String(r.failed).padStart(7)} ${String(r.waiting).padStart(8)}`,
		);
	const counts = await db.query(`SELECT 'raw.telegram_updates' AS t, count(*) FROM raw.telegram_updates
		UNION ALL SELECT 'tg.messages', count(*) FROM tg.messages
		UNION ALL SELECT 'tg.message_versions', count(*) FROM tg.message_versions
		UNION ALL SELECT 'tg.files', count(*) FROM tg.files
		UNION ALL SELECT 'tg.chat_member_events', count(*) FROM tg.chat_member_events
		UNION ALL SELECT 'content.urls', count(*) FROM content.urls
		UNION ALL SELECT 'content.documents (done)', count(*) FROM content.documents WHERE status = 'done'
		UNION ALL SELECT 'kg.chunks', count(*) FROM kg.chunks
		UNION ALL SELECT 'raw.telegram_quarantine', count(*) FROM raw.telegram_quarantine
		UNION ALL SELECT 'ops.errors', count(*) FROM ops.errors`);
	console.log('\nrows per table:');
	for (const r of counts.rows) console.log(`  ${r.t.padEnd(26)} ${r.count}`);
	const docs =
		await db.query(`SELECT d.id, d.doc_type, coalesce(d.title, u.normalized_url, d.source_key) AS name, d.status, d.token_count,
		(SELECT count(*) FROM kg.chunks c WHERE c.document_id = d.id)::int AS chunks FROM content.documents d LEFT JOIN content.urls u ON u.id = d.url_id ORDER BY d.id`);
	console.log('\ncontent.documents:');
	for (const d of docs.rows)
		console.log(`  #${d.id} ${d.doc_type} ${d.name} — ${d.status}, ${d.token_count ?? '?'} tokens, ${d.chunks} chunks`);
	const errors = await db.query(
		`SELECT id, status_code, kind, node, message, correlation_id FROM ops.errors ORDER BY id`,
	);
	console.log('\nops.errors:');
	for (const e of errors.rows)
		console.log(`  #${e.id} ${e.status_code} ${e.kind} [${e.node}] ${e.message} correlation ${e.correlation_id}`);
}
