/**
 * Update → Process: WF20 of seed 003 (Update Processor). Stores the facts of one raw Telegram update in
 * tg.* and enqueues the content jobs, in one transaction, idempotently (a replay changes no row):
 *  - tg.users, tg.chats upserted (updated only when a value differs);
 *  - tg.messages (unique tenant/chat/message_id) and tg.message_versions (unique message_fk/version_no;
 *    version 0 as sent, edit_date for an edit), tg.files / tg.file_instances / tg.message_attachments;
 *  - tg.chat_member_events and tg.chat_memberships_current (moves forward only, in (date, update_id) order);
 *  - ops.jobs `url_normalize` per URL (WF30) and `file_download` per attachment (WF32), each once
 *    (dedup key), when the chat policy allows URL fetch / file download; `qa_answer` (WF51) for a question
 *    to the bot — a DM's text that is not a /command, or a group text mentioning `@<bot username>`.
 * Input `req`: `{ tenant_id (uuid), update? (Telegram Update), raw_update_id?, trace_id?, bot_id? }` —
 *   WF10's job payload carries `raw_update_id` and no `update` (issue 14): the update is then read from
 *   raw.telegram_updates (that id, that tenant); an `update` given in `req` is used as it is. One of the
 *   two is required. bot_id finds the bot's username for mentions.
 * Output: `{ update_type, chat_id, message_id, message_fk, message_version_id,
 *   created_jobs: { url_jobs, file_jobs, qa_jobs: [job ids] }, member_events }` (nulls when the update
 *   has no message).
 * Texts PostgreSQL cannot store — a NUL or a lone UTF-16 surrogate anywhere in the update (text, caption,
 *   names, titles, file names) — are stored with each such character replaced by U+FFFD (storable.ts): the
 *   rest is kept as sent, so the message stays recognisable; never a 5xx nor a job failing on every retry.
 * Member changes are ordered by (Telegram's date, update_id): within one second the higher update_id of the
 *   same bot (`bot_id`, one of this tenant's) wins; a tie whose order is unknown (no bot_id, another bot's
 *   update, or a row written before migration 010) keeps the non-member state.
 * Errors: 422 `req.update.<field>` for a message Telegram would never send, `req.raw_update_id` when
 *   neither it nor `update` is given; 404 not_found (not retryable, details.code NOT_FOUND) when no raw
 *   row of this tenant has that id (e.g. pruned by retention); 503/500 db (rolled back).
 */
import type { Pool, PoolClient } from 'pg';
import { z, ZodError } from 'zod';
import { DbId, parseRequest, TenantId } from '../../../shared/contracts/request';
import { ContractError, fromPgError } from '../../../shared/errors';
import { inTransaction } from '../../../shared/postgres/transaction';
import { replaceUnstorable } from '../../../shared/sanitize';
import { enqueueJobs } from '../../../shared/jobs/enqueue';
import { JOB_TYPES } from '../../../shared/jobs/registry';
import { BOT_USERNAME, CHAT_FETCH_POLICY } from '../../../shared/statements/core';
import { RAW_UPDATE } from '../../../shared/statements/telegramRaw';
import * as SQL from '../../../shared/statements/tg';
import type { KnowledgeOperation } from '../types';
import { parseUpdate, type ParsedUpdate } from './parseUpdate';
import { storableUpdate } from './storable';

const Update = z.object({ update_id: z.number({ required_error: 'is required' }).int() }).passthrough();

export const ProcessUpdateRequest = z
	.object({
		tenant_id: TenantId,
		/** absent: read from raw.telegram_updates by raw_update_id */
		update: Update.optional(),
		/** copied into the job payloads (jsonb): a NUL or a lone surrogate is refused 422 `req.trace_id` */
		trace_id: z
			.string()
			.refine(
				(t) => !replaceUnstorable(t).replaced,
				'contains a NUL character or a lone UTF-16 surrogate, which cannot be stored',
			)
			.nullish(),
		raw_update_id: DbId.nullish(),
		/** the receiving bot (WF10's job payload): its username recognises mentions */
		bot_id: z.string().uuid('must be a UUID').nullish(),
	})
	.refine((r) => r.update !== undefined || (r.raw_update_id !== undefined && r.raw_update_id !== null), {
		message: 'is required when req has no update',
		path: ['raw_update_id'],
	});

type Request = z.infer<typeof ProcessUpdateRequest>;

/** The update stored as raw.telegram_updates row `req.raw_update_id` of `req.tenant_id`. @throws 404, 503/500 db */
async function readRawUpdate(pool: Pool, req: Request): Promise<z.infer<typeof Update>> {
	let row: { update: unknown } | undefined;
	try {
		row = (await pool.query(RAW_UPDATE, [req.raw_update_id, req.tenant_id])).rows[0];
	} catch (error) {
		throw fromPgError(error, { operation: 'select', table: 'raw.telegram_updates' });
	}
	if (!row) {
		throw ContractError.notFound(
			`raw update ${req.raw_update_id} of this tenant does not exist (pruned by retention?)`,
			{ code: 'NOT_FOUND', field: 'req.raw_update_id' },
			{ operation: 'select', table: 'raw.telegram_updates' },
		);
	}
	const parsed = Update.safeParse(row.update);
	if (!parsed.success) {
		throw ContractError.validation(
			'invalid update: req.update.update_id is required',
			{ code: 'VALIDATION', field: 'req.update.update_id' },
			{ operation: 'validate', ...TABLES },
		);
	}
	return parsed.data;
}

const TABLES = { table: 'tg.messages' };

async function one(client: PoolClient, sql: string, params: unknown[]) {
	return (await client.query(sql, params)).rows[0] as Record<string, unknown> | undefined;
}

async function store(
	client: PoolClient,
	tenantId: string,
	parsed: ParsedUpdate,
	req: Request,
	updateId: number,
	correlationId: string,
	sourceBot: string | null,
) {
	const chat = parsed.chat!;
	if (parsed.users.length > 0) await client.query(SQL.UPSERT_USERS, [tenantId, JSON.stringify(parsed.users)]);
	await client.query(SQL.UPSERT_CHAT, [tenantId, chat.id, chat.type, chat.title ?? null, chat.username ?? null]);
	const data: Record<string, unknown> = {
		chat_id: chat.id,
		message_id: null,
		message_fk: null,
		message_version_id: null,
		created_jobs: { url_jobs: [], file_jobs: [], qa_jobs: [] },
		member_events: 0,
	};
	const message = parsed.message;
	if (message) {
		const dm = chat.type === 'private';
		const visibility = dm ? 'dm' : 'group';
		const dmOwner = dm ? (message.from_user_id ?? chat.id) : null;
		const key = [tenantId, chat.id, message.message_id];
		await client.query(SQL.INSERT_MESSAGE, [...key, message.from_user_id, message.date, visibility, dmOwner]);
		const messageFk = Number((await one(client, SQL.FIND_MESSAGE, key))!.id);
		await client.query(SQL.INSERT_VERSION, [
			messageFk,
			message.version_no,
			message.text,
			message.caption,
			message.normalized_text,
			JSON.stringify(message.payload),
			req.raw_update_id ?? null,
		]);
		const versionId = Number((await one(client, SQL.FIND_VERSION, [messageFk, message.version_no]))!.id);
		if (message.attachments.length > 0) {
			const attachments = JSON.stringify(message.attachments);
			await client.query(SQL.UPSERT_FILES, [tenantId, attachments]);
			await client.query(SQL.INSERT_ATTACHMENTS, [tenantId, versionId, attachments]);
		}
		const policy = (await one(client, CHAT_FETCH_POLICY, [tenantId, chat.id]))!;
		const jobCtx = { chat_id: chat.id, visibility, dm_owner_user_id: dmOwner, message_version_id: versionId };
		const question = message.question
			? [
					{
						job_type: JOB_TYPES.qa_answer,
						dedup_key: `qa_answer:${versionId}`,
						payload: {
							tenant_id: tenantId,
							tg_user_id: message.from_user_id,
							channel: visibility,
							chat_id: chat.id,
							question: message.question,
							question_message_version_id: versionId,
							trace_id: req.trace_id ?? null,
						},
					},
				]
			: [];
		const wanted = [
			...(message.from_user_id === null ? [] : question),
			...(policy.allow_url_fetch ? message.urls : []).map((url) => ({
				job_type: JOB_TYPES.url_normalize,
				dedup_key: `url_normalize:${versionId}:${url}`,
				payload: { tenant_id: tenantId, url, ctx: jobCtx, trace_id: req.trace_id ?? null },
			})),
			...(policy.allow_file_download ? message.attachments : []).map((a) => ({
				job_type: JOB_TYPES.file_download,
				dedup_key: `file_download:${versionId}:${a.file_unique_id}`,
				payload: {
					tenant_id: tenantId,
					file_id: a.file_id,
					file_unique_id: a.file_unique_id,
					file_name: a.file_name,
					mime_type: a.mime_type,
					file_size: a.file_size,
					ctx: jobCtx,
					trace_id: req.trace_id ?? null,
				},
			})),
		];
		const ids = await enqueueJobs(client, tenantId, correlationId, wanted);
		const idsOf = (type: string) => ids.filter((_, i) => wanted[i].job_type === type);
		Object.assign(data, {
			message_id: message.message_id,
			message_fk: messageFk,
			message_version_id: versionId,
			created_jobs: {
				url_jobs: idsOf(JOB_TYPES.url_normalize),
				file_jobs: idsOf(JOB_TYPES.file_download),
				qa_jobs: idsOf(JOB_TYPES.qa_answer),
			},
		});
	}
	if (parsed.members.length > 0) {
		const recorded = await one(client, SQL.RECORD_MEMBERS, [
			tenantId,
			chat.id,
			req.raw_update_id ?? null,
			JSON.stringify(parsed.members),
			updateId,
			sourceBot,
		]);
		data.member_events = recorded!.events;
	}
	return data;
}

export const processOperation: KnowledgeOperation = {
	value: 'process',
	name: 'Process',
	action: 'Process a Telegram update',
	description:
		'Store the users, chat, message version, attachments and member changes of a raw update; enqueue URL and file jobs (WF20)',
	workflow: 'WF20',
	async execute({ pool, state, correlationId }, raw) {
		const req = parseRequest(ProcessUpdateRequest, raw, TABLES);
		Object.assign(state.ctx!, { tenant_id: req.tenant_id, trace_id: req.trace_id ?? null });
		let botUsername: string | null = null;
		/** the receiving bot when it is this tenant's: it numbers the update_ids that order member changes */
		let sourceBot: string | null = null;
		if (req.bot_id) {
			try {
				const bot = (await pool.query(BOT_USERNAME, [req.bot_id, req.tenant_id])).rows[0];
				botUsername = bot?.username ?? null;
				sourceBot = bot ? req.bot_id : null;
			} catch (error) {
				throw fromPgError(error, { operation: 'select', table: 'core.bots' });
			}
		}
		const update = req.update ?? (await readRawUpdate(pool, req));
		let parsed: ParsedUpdate;
		try {
			parsed = parseUpdate(storableUpdate(update).update, botUsername);
		} catch (error) {
			if (!(error instanceof ZodError)) throw error;
			const issue = error.issues[0];
			const field = ['req', 'update', Object.keys(update).find((k) => k !== 'update_id'), ...issue.path].join('.');
			throw ContractError.validation(
				`invalid update: ${field} ${issue.message}`,
				{ code: 'VALIDATION', field },
				{ operation: 'validate', ...TABLES },
			);
		}
		if (parsed.chat)
			Object.assign(state.ctx!, { chat_id: parsed.chat.id, message_id: parsed.message?.message_id ?? null });
		if (!parsed.chat) {
			return {
				update_type: parsed.update_type,
				chat_id: null,
				message_id: null,
				message_fk: null,
				message_version_id: null,
				created_jobs: { url_jobs: [], file_jobs: [], qa_jobs: [] },
				member_events: 0,
			};
		}
		try {
			const data = await inTransaction(pool, (client) =>
				store(client, req.tenant_id, parsed, req, update.update_id, correlationId, sourceBot),
			);
			return { update_type: parsed.update_type, ...data };
		} catch (error) {
			throw fromPgError(error, { operation: 'upsert', ...TABLES });
		}
	},
};
