/**
 * The job-type registry against what ships: every registered type has a worker workflow that WF90 claims
 * it for and dispatches to; every type a shipped workflow claims or produces is registered; no producer
 * in nodes/ or scripts/ writes a job_type literal; the generated workflows equal workflows-json/; the
 * statuses equal the schema's CHECK constraints; payloads are checked (422 naming the field).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from '@jest/globals';
import { shippedWorkflows } from '../helpers/shippedWorkflows';
import { ProcessUpdateRequest } from '../../nodes/KnowledgeBot/actions/update/process.operation';
import { NormalizeUrlRequest } from '../../nodes/KnowledgeBot/actions/url/normalize.operation';
import { FetchUrlRequest } from '../../nodes/KnowledgeBot/actions/url/fetch.operation';
import { DownloadFileRequest } from '../../nodes/KnowledgeBot/actions/file/download.operation';
import { ExtractRequest } from '../../nodes/KnowledgeBot/actions/document/extract.operation';
import { ChunkRequest } from '../../nodes/KnowledgeBot/actions/document/chunk.operation';
import { EmbedRequest } from '../../nodes/KnowledgeBot/actions/document/embed.operation';
import { AnswerRequest } from '../../nodes/KnowledgeBot/actions/qa/answer.operation';
import { ContractError } from '../../nodes/shared/errors';
import {
	JOB_REGISTRY,
	JOB_RUN_STATUS,
	JOB_STATUS,
	JOB_TYPE_LIST,
	JOB_TYPES,
	validateJob,
	type JobType,
} from '../../nodes/shared/jobs';

// "TelegramIngest.node" would resolve to the codex .json beside it
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { TelegramIngest } =
	require('../../nodes/TelegramIngest/TelegramIngest.node.ts') as typeof import('../../nodes/TelegramIngest/TelegramIngest.node');

const ROOT = path.join(__dirname, '..', '..');
const WORKFLOWS = path.join(ROOT, 'workflows-json');

interface Wf {
	id: string;
	name: string;
	nodes: { name: string; type: string; parameters: Record<string, any> }[];
}

const shipped: Wf[] = shippedWorkflows<Wf>().map((s) => s.workflow);

/** The value a Set node of `wf` assigns to `field`. */
function assigned(wf: Wf, field: string): unknown {
	for (const n of wf.nodes)
		for (const a of n.parameters.assignments?.assignments ?? []) if (a.name === field) return a.value;
	return undefined;
}

/** The job types a Claim Jobs node claims: its literal list, or the Set value its `$json.req.x` expression reads. */
function claimedTypes(wf: Wf): string[] {
	return wf.nodes
		.filter((n) => n.type === 'n8n-nodes-contracts.pipelineCapture' && n.parameters.operation === 'claimJobs')
		.flatMap((n) => {
			const raw = String(n.parameters.jobType ?? 'telegram_update');
			const ref = /^=\{\{\s*\$json\.(\S+)\s*\}\}$/.exec(raw);
			const list = ref ? String(assigned(wf, ref[1])) : raw;
			return list
				.split(',')
				.map((t) => t.trim())
				.filter(Boolean);
		});
}

test('every registered type has its worker workflow shipped, and WF90 claims it and dispatches it there', () => {
	const runners = shipped.filter((wf) => claimedTypes(wf).length > 0);
	assert.ok(runners.length > 0, 'a workflow claims jobs');
	for (const type of JOB_TYPE_LIST) {
		const entry = JOB_REGISTRY[type];
		const file = path.join(WORKFLOWS, entry.workflow_file);
		assert.ok(fs.existsSync(file), `${type}: ${entry.workflow_file} is shipped`);
		const worker = JSON.parse(fs.readFileSync(file, 'utf8')) as Wf;
		assert.equal(worker.id, entry.workflow_id, `${type}: ${entry.workflow_file} has the id WF90 calls`);
		assert.ok(
			worker.nodes.some((n) => n.type === 'n8n-nodes-base.executeWorkflowTrigger'),
			`${type}: ${entry.workflow_id} can be called by WF90`,
		);
		const runner = runners.find((wf) => claimedTypes(wf).includes(type));
		assert.ok(runner, `${type} is claimed by a shipped workflow`);
		// the runner's dispatch (Job Request's job.worker expression, evaluated for a claimed job of this type) sends it to that workflow
		const dispatch = /^=\{\{([\s\S]*)\}\}$/.exec(String(assigned(runner, 'job.worker')))![1];
		// eslint-disable-next-line @typescript-eslint/no-implied-eval
		const workerOf = new Function('$json', `return (${dispatch});`) as (json: unknown) => string;
		assert.equal(
			workerOf({ data: { job_type: type } }),
			entry.workflow_id,
			`${type} is dispatched to ${entry.workflow_id}`,
		);
		assert.equal(workerOf({ data: { job_type: 'not_registered' } }), '', 'an unknown type goes nowhere');
	}
});

test('every type a shipped workflow claims or enqueues (Telegram Ingest) is registered', () => {
	const claimed = shipped.flatMap(claimedTypes);
	const produced = shipped.flatMap((wf) =>
		wf.nodes
			.filter((n) => n.type === 'n8n-nodes-contracts.telegramIngest')
			.map((n) =>
				String(
					n.parameters.jobType ??
						new TelegramIngest().description.properties.find((p) => p.name === 'jobType')!.default,
				),
			),
	);
	assert.ok(produced.length > 0, 'WF10 ships a Telegram Ingest');
	for (const type of [...claimed, ...produced]) assert.ok(type in JOB_REGISTRY, `${type} is registered`);
	assert.equal(
		new TelegramIngest().description.properties.find((p) => p.name === 'jobType')!.default,
		JOB_TYPES.telegram_update,
	);
});

test('no producer writes a job_type literal: every job_type in nodes/ and scripts/ comes from the registry', () => {
	const sources = (dir: string): string[] =>
		fs
			.readdirSync(dir, { withFileTypes: true })
			.flatMap((e) =>
				e.isDirectory() ? sources(path.join(dir, e.name)) : /\.(ts|js)$/.test(e.name) ? [path.join(dir, e.name)] : [],
			);
	const offenders: string[] = [];
	for (const file of [...sources(path.join(ROOT, 'nodes')), ...sources(path.join(ROOT, 'scripts'))]) {
		if (file.includes(`${path.sep}shared${path.sep}jobs${path.sep}`)) continue;
		fs.readFileSync(file, 'utf8')
			.split('\n')
			.forEach((line, i) => {
				if (/job_?type['"]?\s*[:=]\s*['"`](?!=)/i.test(line) || /job_type\s*(=|<>|!=)\s*'/.test(line))
					offenders.push(`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
			});
	}
	assert.deepEqual(offenders, []);
});

test('the generated workflows equal workflows-json/ (node scripts/gen-knowledge-workflows.js)', () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gen-wf-'));
	try {
		execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'gen-knowledge-workflows.js'), dir]);
		const written = fs.readdirSync(dir);
		assert.ok(written.includes('WF90_job_runner.json'));
		for (const type of JOB_TYPE_LIST)
			assert.ok(written.includes(JOB_REGISTRY[type].workflow_file), `${type}'s worker is generated`);
		for (const file of written)
			assert.equal(
				fs.readFileSync(path.join(dir, file), 'utf8'),
				fs.readFileSync(path.join(WORKFLOWS, file), 'utf8'),
				`${file} differs from workflows-json/: run the generator and commit`,
			);
	} finally {
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

test('JOB_STATUS and JOB_RUN_STATUS are the statuses the schema allows', () => {
	const sql = fs.readFileSync(path.join(ROOT, 'db', 'migrations', '001_ops_raw_core.sql'), 'utf8');
	const checkOf = (table: string) => {
		const body = sql.slice(sql.indexOf(`CREATE TABLE ${table} (`));
		return /status\s+text NOT NULL[^,]*?CHECK \(status IN \(([^)]*)\)\)/s
			.exec(body)![1]
			.split(',')
			.map((s) => s.trim().replace(/'/g, ''));
	};
	assert.deepEqual(Object.values(JOB_STATUS).sort(), checkOf('ops.jobs').sort());
	assert.deepEqual(Object.values(JOB_RUN_STATUS).sort(), checkOf('ops.job_runs').sort());
});

const tenant = '6f1c1a3e-3f7d-4a59-9a43-3d1b2f0f7a10';
const ctx = { chat_id: -100123, visibility: 'group', dm_owner_user_id: null, message_version_id: 7 };
/** A payload as each producer writes it, and the worker's own request schema. */
const SAMPLES: Record<
	JobType,
	{ payload: Record<string, unknown>; worker: { safeParse(v: unknown): { success: boolean } } }
> = {
	telegram_update: {
		payload: {
			tenant_id: tenant,
			bot_id: '0b4a6f0e-9a52-4c53-8d43-1f6f0f7b2a11',
			raw_update_id: 3,
			update_id: 99,
			update_type: 'message',
			trace_id: null,
			correlation_id: '1d9f0c55-8f0b-4e3e-9d3e-5a4f3c2b1a00',
		},
		worker: ProcessUpdateRequest,
	},
	url_normalize: {
		payload: { tenant_id: tenant, url: 'https://example.org/a', ctx, trace_id: null },
		worker: NormalizeUrlRequest,
	},
	url_fetch: { payload: { tenant_id: tenant, url_id: 5, ctx, trace_id: null }, worker: FetchUrlRequest },
	file_download: {
		payload: {
			tenant_id: tenant,
			file_id: 'BQAC',
			file_unique_id: 'AgAD',
			file_name: 'a.pdf',
			mime_type: 'application/pdf',
			file_size: 10,
			ctx,
			trace_id: null,
		},
		worker: DownloadFileRequest,
	},
	document_extract: { payload: { tenant_id: tenant, document_id: 9, trace_id: null }, worker: ExtractRequest },
	document_chunk: { payload: { tenant_id: tenant, document_id: 9, trace_id: null }, worker: ChunkRequest },
	document_embed: { payload: { tenant_id: tenant, document_id: 9, model_id: 1, trace_id: null }, worker: EmbedRequest },
	qa_answer: {
		payload: {
			tenant_id: tenant,
			tg_user_id: 42,
			channel: 'dm',
			chat_id: 42,
			question: 'why?',
			question_message_version_id: 7,
			trace_id: null,
		},
		worker: AnswerRequest,
	},
};

test("each type's producer payload passes its registry schema and its worker's request schema", () => {
	for (const type of JOB_TYPE_LIST) {
		assert.equal(validateJob(type, SAMPLES[type].payload), type);
		assert.ok(SAMPLES[type].worker.safeParse(SAMPLES[type].payload).success, `${type}: the worker accepts it`);
	}
});

test('validateJob: a type no worker handles, or a bad payload, is a 422 naming the field', () => {
	const refused = (fn: () => unknown) => {
		try {
			fn();
		} catch (error) {
			assert.ok(error instanceof ContractError);
			assert.equal(error.statusCode, 422);
			return error.details as { field: string };
		}
		assert.fail('not refused');
	};
	assert.equal(refused(() => validateJob('no_such_type', {})).field, 'job_type');
	for (const type of JOB_TYPE_LIST) {
		const { tenant_id: _, ...withoutTenant } = SAMPLES[type].payload;
		assert.equal(refused(() => validateJob(type, withoutTenant)).field, 'payload.tenant_id', type);
	}
	assert.equal(
		refused(() =>
			validateJob(JOB_TYPES.url_normalize, { ...SAMPLES.url_normalize.payload, ctx: { ...ctx, visibility: 'dm' } }),
		).field,
		'payload.ctx.dm_owner_user_id',
	);
	assert.equal(
		refused(() => validateJob(JOB_TYPES.qa_answer, { ...SAMPLES.qa_answer.payload, channel: 'public' })).field,
		'payload.channel',
	);
	assert.equal(
		refused(() => validateJob(JOB_TYPES.document_embed, { ...SAMPLES.document_embed.payload, model_id: 'x' })).field,
		'payload.model_id',
	);
});

test('telegram_update: the raw row id, or the update itself, is required (issue 14: WF10 carries only the id)', () => {
	const { raw_update_id: _, ...withoutRaw } = SAMPLES.telegram_update.payload;
	try {
		validateJob(JOB_TYPES.telegram_update, withoutRaw);
		assert.fail('not refused');
	} catch (error) {
		assert.ok(error instanceof ContractError);
		assert.deepEqual([error.statusCode, (error.details as { field: string }).field], [422, 'payload.raw_update_id']);
	}
	assert.equal(ProcessUpdateRequest.safeParse(withoutRaw).success, false, 'the worker refuses it too');
	const carried = { ...withoutRaw, update: { update_id: 99, message: { message_id: 1 } } };
	assert.equal(validateJob(JOB_TYPES.telegram_update, carried), JOB_TYPES.telegram_update);
	assert.ok(ProcessUpdateRequest.safeParse(carried).success);
});

test("WF90's Finish Job retries on fail with its claim tokens and keeps its error output (issue 26: a lost reply is answered as a replay)", () => {
	const wf = JSON.parse(fs.readFileSync(path.join(ROOT, 'workflows-json', 'WF90_job_runner.json'), 'utf8')) as {
		nodes: { name: string; type: string; parameters: Record<string, unknown>; [k: string]: unknown }[];
	};
	const finish = wf.nodes.filter(
		(n) => n.type === 'n8n-nodes-contracts.pipelineCapture' && n.parameters.operation === 'finishJob',
	);
	assert.equal(finish.length, 1, 'one Finish Job node');
	const [node] = finish;
	assert.equal(node.retryOnFail, true, 'Retry On Fail');
	assert.ok(Number(node.maxTries) >= 2 && Number(node.maxTries) <= 5, 'maxTries in 2…5');
	assert.ok(Number(node.waitBetweenTries) > 0 && Number(node.waitBetweenTries) <= 5000, 'wait 0…5000 ms');
	assert.equal(node.onError, 'continueErrorOutput', 'error output kept');
	assert.match(String(node.parameters.claimToken), /claim_token/, 'the claim token is passed (the replay needs it)');
});
