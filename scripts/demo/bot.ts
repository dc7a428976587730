/**
 * The bot scenario of the demo: Alice asks the knowledge bot twice, in her DM and with an @mention in the group,
 * as Telegram updates through WF10; WF90 → WF20 → qa_answer → WF51 answers from the documents she may see, and
 * the demo prints each question, the reply as sent to Telegram, its citations and the audit.qa_* rows, and
 * checks the Sources of each reply (issue 30): at least one line, one line per document, and the document the
 * question is about (EXPECTED) is the one cited — it says which reply does not, and the run exits with code 1.
 */
import type { Client } from 'pg';
import { JOB_TYPES } from '../../nodes/shared/jobs';
import { newUpdateId } from '../../test/helpers/updates';
import { ALICE, BOT_USERNAME, GROUP, SECRET } from './settings';

/** A text message from Alice, in her DM with the bot or in the group with an @mention of the bot. */
export function question(where: 'dm' | 'group', messageId: number, text: string) {
	const mention = `@${BOT_USERNAME}`;
	const body = where === 'group' ? `${mention} ${text}` : text;
	return {
		update_id: newUpdateId(),
		message: {
			message_id: messageId,
			from: ALICE,
			chat:
				where === 'group'
					? GROUP
					: { id: ALICE.id, first_name: ALICE.first_name, username: ALICE.username, type: 'private' },
			date: Math.floor(Date.now() / 1000),
			text: body,
			...(where === 'group' ? { entities: [{ type: 'mention', offset: 0, length: mention.length }] } : {}),
		},
	};
}

/** Each question and the document (its label in the Sources list) that answers it: the only one cited. */
const EXPECTED: Record<number, RegExp> = {
	5201: /^notes\.pdf$/,
	5202: /\/paper\.pdf$/,
};

/**
 * The bot answers: Alice asks in her DM and with an @mention in the group, through WF10; WF90 runs WF20,
 * then the qa_answer jobs (WF51). Prints each question, the reply as sent to Telegram, its citations from
 * audit.qa_citations (source number, document, chunk, score, snippet) and the audit.qa_* rows; a reply whose
 * Sources is not exactly the expected document (EXPECTED) is reported and sets process.exitCode = 1.
 */
export async function askTheBot(db: Client, hook: string, sent: { chat_id: number; text: string }[]) {
	const started = Date.now();
	const asks: Array<['dm' | 'group', number, string]> = [
		['dm', 5201, 'What do the meeting notes say about vector indexes?'],
		['group', 5202, 'what is dense passage retrieval?'],
	];
	console.log('\nThe bot answers (Alice asks as Telegram updates through WF10; WF90 → WF20 → qa_answer → WF51):');
	const before = (
		await db.query('SELECT coalesce(max(id), 0) AS id FROM ops.jobs WHERE job_type = $1', [JOB_TYPES.qa_answer])
	).rows[0].id;
	for (const [where, messageId, text] of asks) {
		const update = question(where, messageId, text);
		const res = await fetch(hook, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'X-Telegram-Bot-Api-Secret-Token': SECRET },
			body: JSON.stringify(update),
		});
		console.log(
			`  ${(where === 'dm' ? 'question in a DM' : 'question in the group').padEnd(22)} → HTTP ${res.status} ${await res.text()}`,
		);
	}
	const deadline = Date.now() + 90_000;
	let jobs: { id: string; status: string; attempts: number }[] = [];
	while (Date.now() < deadline) {
		jobs = (
			await db.query('SELECT id, status, attempts FROM ops.jobs WHERE job_type = $2 AND id > $1 ORDER BY id', [
				before,
				JOB_TYPES.qa_answer,
			])
		).rows;
		const open = (await db.query("SELECT count(*)::int AS n FROM ops.jobs WHERE status IN ('queued', 'running')"))
			.rows[0].n;
		if (jobs.length === asks.length && open === 0) break;
		await new Promise((r) => setTimeout(r, 1000));
	}
	console.log(
		`  WF51 answerer jobs: ${jobs.map((j) => `#${j.id} ${j.status}`).join(', ') || 'none'} (${((Date.now() - started) / 1000).toFixed(0)} s after the questions)`,
	);
	const turns =
		await db.query(`SELECT t.id, s.channel, s.chat_id, t.question, t.answer_text, t.model, t.telegram_message_id,
		       m.message_id AS question_message_id
		FROM audit.qa_turns t JOIN audit.qa_sessions s ON s.session_id = t.session_id
		LEFT JOIN tg.message_versions v ON v.id = t.question_message_version_id LEFT JOIN tg.messages m ON m.id = v.message_fk
		ORDER BY t.id`);
	const problems: string[] = [];
	for (const t of turns.rows) {
		const reply = sent.find((m) => String(m.chat_id) === String(t.chat_id) && m.text.startsWith(t.answer_text));
		console.log(`\n  Q (${t.channel}, chat ${t.chat_id}): ${t.question}`);
		console.log(`  reply sent to Telegram (message ${t.telegram_message_id ?? 'not sent'}):`);
		for (const l of (reply?.text ?? '(no sendMessage seen)').split('\n')) console.log(`    | ${l}`);
		const cites = await db.query(
			`SELECT c.rank, c.chunk_id, c.score, c.snippet, (c.source_ref->>'source')::int AS source, d.id AS document_id, d.doc_type, k.chunk_no,
			        coalesce(d.title, f.file_name, u.normalized_url, d.source_key, 'chunk ' || c.chunk_id) AS document
			 FROM audit.qa_citations c LEFT JOIN kg.chunks k ON k.id = c.chunk_id LEFT JOIN content.documents d ON d.id = k.document_id
			 LEFT JOIN content.urls u ON u.id = d.url_id LEFT JOIN tg.files f ON f.tenant_id = d.tenant_id AND 'file:' || f.file_unique_id = d.source_key
			 WHERE c.turn_id = $1 ORDER BY c.rank`,
			[t.id],
		);
		console.log('  citations (audit.qa_citations: one row per cited chunk, grouped by source number):');
		for (const c of cites.rows) {
			const snippet = String(c.snippet).replace(/\s+/g, ' ');
			console.log(
				`    source [${c.source ?? c.rank}] rank ${c.rank} chunk #${c.chunk_id} — document ${c.document_id ?? '?'} ${c.document} (${c.doc_type ?? '?'}, chunk ${c.chunk_no ?? '?'}) score ${Number(c.score).toFixed(4)} "${snippet.length > 60 ? `${snippet.slice(0, 59)}…` : snippet}"`,
			);
		}
		// the check of issue 30: the reply's Sources is exactly the document the question is about
		const lines = (reply?.text ?? '').split('\n\nSources:\n')[1]?.split('\n') ?? [];
		const labels = lines.map((l) => l.replace(/^\[\d+\] /, '').replace(/ — .*$/, ''));
		const expected = EXPECTED[Number(t.question_message_id)];
		if (!reply) problems.push(`"${t.question}": no reply seen`);
		else if (new Set(labels).size !== labels.length) problems.push(`"${t.question}": a document listed twice`);
		else if (expected && !(labels.length === 1 && expected.test(labels[0])))
			problems.push(`"${t.question}": Sources ${JSON.stringify(labels)}, expected one source matching ${expected}`);
	}
	const audit =
		await db.query(`SELECT 'audit.qa_sessions' AS t, count(*)::int AS n, string_agg(channel || ' chat ' || chat_id || ' user ' || tg_user_id, '; ' ORDER BY started_at) AS rows FROM audit.qa_sessions
		UNION ALL SELECT 'audit.qa_turns', count(*)::int, string_agg('#' || id || ' model ' || coalesce(model, '-') || ' telegram message ' || coalesce(telegram_message_id::text, '-'), '; ' ORDER BY id) FROM audit.qa_turns
		UNION ALL SELECT 'audit.qa_citations', count(*)::int, string_agg(DISTINCT 'turn #' || turn_id || ': ' || (SELECT count(*) FROM audit.qa_citations x WHERE x.turn_id = c.turn_id), '; ') FROM audit.qa_citations c`);
	console.log(
		problems.length
			? `\n  Sources check FAILED:\n${problems.map((p) => `    ${p}`).join('\n')}`
			: '\n  Sources check: each reply lists one source, the document its question is about',
	);
	if (problems.length) process.exitCode = 1;
	console.log('\n  audit.qa_* rows:');
	for (const r of audit.rows) console.log(`    ${r.t.padEnd(19)} ${String(r.n).padStart(2)}  ${r.rows ?? ''}`);
	const failed = await db.query(
		'SELECT e.job_id, e.status_code, e.node, e.message FROM ops.errors e JOIN ops.jobs j ON j.id = e.job_id WHERE j.job_type = $1 ORDER BY e.id',
		[JOB_TYPES.qa_answer],
	);
	for (const e of failed.rows)
		console.log(`  ops.errors for job #${e.job_id}: ${e.status_code} [${e.node}] ${e.message}`);
}
