#!/usr/bin/env node
'use strict';
/**
 * Writes the knowledge-bot workflows of seed 003 into workflows-json/: WF11 and WF60 on a Schedule;
 * the worker sub-workflows WF20, WF30, WF31, WF32, WF33, WF40, WF41, WF50, WF51; the WF90 job runner.
 * Node ids are derived from the workflow and node names (scripts/lib/workflowBuilder.js), so re-running gives the same files. Edit here, run `node scripts/gen-knowledge-workflows.js`, commit both.
 * WF90's job types and its job_type → worker map come from the job-type registry (nodes/shared/jobs/registry.json);
 * the script fails when a registered type's worker is not one of the workflows it writes under that file name.
 * `node scripts/gen-knowledge-workflows.js <dir>` writes into <dir> instead (test/unit/jobRegistry.test.ts compares).
 * (The workflows stay editable on the canvas; this script only keeps the shipped copies consistent.)
 */
const { EMBEDDINGS, LLM, PG, TELEGRAM, outputDir, workflowBuilder: builder } = require('./lib/workflowBuilder');

const OUT = outputDir(process.argv);
const REGISTRY = require('../nodes/shared/jobs/registry.json');
/** workflow id → file name of every workflow written. */
const WRITTEN = {};

/** scripts/lib/workflowBuilder.js's builder, writing into OUT and recording the file in WRITTEN. */
function workflowBuilder(id, name) {
	const wf = builder(id, name);
	return {
		...wf,
		write: (file) => {
			wf.write(OUT, file);
			WRITTEN[id] = file;
		},
	};
}

/** A worker sub-workflow: Execute Workflow Trigger (passthrough `{ req, ctx }`) → Knowledge Bot → envelope, errors → WF99. */
function worker({ id, file, name, resource, operation, nodeName, input, table, credentials = PG }) {
	const wf = workflowBuilder(id, name);
	const trigger = wf.add({
		name: 'When Called by Another Workflow',
		type: 'n8n-nodes-base.executeWorkflowTrigger',
		typeVersion: 1.1,
		position: [0, 0],
		parameters: { inputSource: 'passthrough' },
		notes: `Input: { req: ${input}, ctx } (seed 003 ${id.slice(0, 4)}; ctx passes through: correlation_id, job_id).`,
	});
	const step = wf.add({
		name: nodeName,
		type: 'n8n-nodes-contracts.knowledgeBot',
		typeVersion: 1,
		position: [260, 0],
		parameters: { resource, operation, req: '={{ $json.req }}', ctx: '={{ $json.ctx || {} }}', options: {} },
		onError: 'continueErrorOutput',
		credentials,
		notes: "SuccessEnvelope with the seed's data; failures to the error output with ctx.",
	});
	wf.connect(trigger, step);
	wf.errorBranch(step, 520, table);
	wf.write(file);
}

worker({
	id: 'WF20UpdateProc',
	file: 'WF20_update_processor.json',
	name: 'WF20 — Update Processor',
	resource: 'update',
	operation: 'process',
	nodeName: 'Process Update',
	input:
		'{ tenant_id, raw_update_id (the update is read from raw.telegram_updates; or update itself), trace_id, bot_id }',
	table: 'tg.messages',
});
worker({
	id: 'WF30UrlNormalizer',
	file: 'WF30_url_normalizer.json',
	name: 'WF30 — URL Normalizer',
	resource: 'url',
	operation: 'normalize',
	nodeName: 'Normalize URL',
	input: '{ tenant_id, url, ctx: { chat_id, visibility, dm_owner_user_id, message_version_id } }',
	table: 'content.urls',
});
worker({
	id: 'WF31UrlFetcher',
	file: 'WF31_url_fetcher.json',
	name: 'WF31 — URL Fetcher',
	resource: 'url',
	operation: 'fetch',
	nodeName: 'Fetch URL',
	input: '{ tenant_id, url_id, ctx: { chat_id, visibility, dm_owner_user_id, message_version_id } }',
	table: 'content.url_fetches',
});
worker({
	id: 'WF32FileDownloader',
	file: 'WF32_file_downloader.json',
	name: 'WF32 — Telegram File Downloader',
	resource: 'file',
	operation: 'download',
	nodeName: 'Download File',
	input: '{ tenant_id, file_id, file_unique_id, ctx: { chat_id, visibility, dm_owner_user_id, message_version_id } }',
	table: 'tg.file_instances',
	credentials: { ...PG, ...TELEGRAM },
});
worker({
	id: 'WF33Extractor',
	file: 'WF33_document_extractor.json',
	name: 'WF33 — Document Extractor',
	resource: 'document',
	operation: 'extract',
	nodeName: 'Extract Text',
	input: '{ tenant_id, document_id }',
	table: 'content.documents',
});
worker({
	id: 'WF40Chunker',
	file: 'WF40_chunker.json',
	name: 'WF40 — Chunker',
	resource: 'document',
	operation: 'chunk',
	nodeName: 'Chunk Document',
	input: '{ tenant_id, document_id, chunking: { max_chars, overlap } }',
	table: 'kg.chunks',
});

worker({
	id: 'WF41Embedder',
	file: 'WF41_embedder.json',
	name: 'WF41 — Embedder',
	resource: 'document',
	operation: 'embed',
	nodeName: 'Embed Chunks',
	input: '{ tenant_id, document_id, model_id }',
	table: 'kg.chunk_embeddings_1536',
	credentials: { ...PG, ...EMBEDDINGS },
});

worker({
	id: 'WF50QaSession',
	file: 'WF50_qa_session_upserter.json',
	name: 'WF50 — QA Session Upserter',
	resource: 'qa',
	operation: 'upsertSession',
	nodeName: 'Upsert Session',
	input: '{ tenant_id, tg_user_id, channel, chat_id, meta }',
	table: 'audit.qa_sessions',
});
worker({
	id: 'WF51Answerer',
	file: 'WF51_answerer.json',
	name: 'WF51 — Answerer',
	resource: 'qa',
	operation: 'answer',
	nodeName: 'Answer Question',
	input: '{ tenant_id, tg_user_id, channel, chat_id, question, question_message_version_id, trace_id }',
	table: 'audit.qa_turns',
	credentials: { ...PG, ...EMBEDDINGS, ...LLM, ...TELEGRAM },
});

/**
 * A Schedule-triggered workflow: Schedule (+ manual) → "Request" (Set `req`) → Knowledge Bot → envelope,
 * errors → WF99; also callable as a sub-workflow with its own `{ req }` (e.g. one chat's retention now).
 */
function scheduled({
	id,
	file,
	name,
	rule,
	ruleNote,
	resource,
	operation,
	nodeName,
	req,
	reqNote,
	table,
	credentials = PG,
}) {
	const wf = workflowBuilder(id, name);
	const schedule = wf.add({
		name: 'Schedule',
		type: 'n8n-nodes-base.scheduleTrigger',
		typeVersion: 1.2,
		position: [0, 0],
		parameters: { rule },
		notes: ruleNote,
	});
	const manual = wf.add({
		name: 'Run Now',
		type: 'n8n-nodes-base.manualTrigger',
		typeVersion: 1,
		position: [0, 200],
		parameters: {},
	});
	const called = wf.add({
		name: 'When Called by Another Workflow',
		type: 'n8n-nodes-base.executeWorkflowTrigger',
		typeVersion: 1.1,
		position: [240, 300],
		parameters: { inputSource: 'passthrough' },
		notes: "Input: { req, ctx } as the seed's input.",
	});
	const request = wf.set(
		'Request',
		[240, 100],
		req.map(([field, type, value]) => [`req.${field}`, type, value]),
		{ include: false, notes: reqNote },
	);
	const step = wf.add({
		name: nodeName,
		type: 'n8n-nodes-contracts.knowledgeBot',
		typeVersion: 1,
		position: [480, 100],
		parameters: {
			resource,
			operation,
			req: '={{ $json.req }}',
			ctx: '={{ Object.assign({ workflow: "' + id.slice(0, 4) + '" }, $json.ctx || {}) }}',
			options: {},
		},
		onError: 'continueErrorOutput',
		credentials,
	});
	wf.connect(schedule, request);
	wf.connect(manual, request);
	wf.connect(request, step);
	wf.connect(called, step);
	wf.errorBranch(step, 720, table);
	wf.write(file);
}

scheduled({
	id: 'WF11Watchdog',
	file: 'WF11_transport_watchdog.json',
	name: 'WF11 — Bot Transport Watchdog',
	rule: { interval: [{ field: 'minutes', minutesInterval: 5 }] },
	ruleNote: 'Every 5 minutes.',
	resource: 'botTransport',
	operation: 'check',
	nodeName: 'Check Webhook',
	table: 'ops.webhook_health_snapshots',
	credentials: { ...PG, ...TELEGRAM },
	req: [
		['tenant_id', 'string', ''],
		['bot_id', 'string', ''],
	],
	reqNote:
		'Seed 003 WF11 input { tenant_id, bot_id }: empty bot_id = the bot of the credential (found by getMe in core.bots.tg_bot_id).',
});
scheduled({
	id: 'WF60Retention',
	file: 'WF60_retention.json',
	name: 'WF60 — Retention & Pruning',
	rule: { interval: [{ field: 'cronExpression', expression: '17 3 * * *' }] },
	ruleNote: 'Daily at 03:17.',
	resource: 'retention',
	operation: 'prune',
	nodeName: 'Prune',
	table: 'core.chat_policies',
	req: [
		['tenant_id', 'string', ''],
		['batch_size', 'number', 500],
		['max_batches', 'number', 20],
	],
	reqNote: 'Seed 003 WF60 input { tenant_id, chat_id } (empty: every tenant and chat) + batching.',
});

/** job_type → the worker sub-workflow that runs it (WF90), from the registry. */
const WORKERS = Object.fromEntries(Object.entries(REGISTRY).map(([type, entry]) => [type, entry.workflow_id]));
for (const [type, entry] of Object.entries(REGISTRY)) {
	if (WRITTEN[entry.workflow_id] !== entry.workflow_file)
		throw new Error(
			`registry: ${type} → ${entry.workflow_id} (${entry.workflow_file}) is not a worker this script writes`,
		);
}

(function jobRunner() {
	const wf = workflowBuilder('WF90JobRunner', 'WF90 — Job Runner');
	const schedule = wf.add({
		name: 'Every 10 Seconds',
		type: 'n8n-nodes-base.scheduleTrigger',
		typeVersion: 1.2,
		position: [0, 0],
		parameters: { rule: { interval: [{ field: 'seconds', secondsInterval: 10 }] } },
	});
	const manual = wf.add({
		name: 'Run Now',
		type: 'n8n-nodes-base.manualTrigger',
		typeVersion: 1,
		position: [0, 200],
		parameters: {},
	});
	const settings = wf.set(
		'Runner Settings',
		[240, 100],
		[
			['req.limit', 'number', 50],
			['req.worker_id', 'string', '={{ "wf90-" + $execution.id }}'],
			['req.job_types', 'string', Object.keys(WORKERS).join(', ')],
		],
		{ include: false, notes: 'Seed 003 WF90 input: { limit, worker_id } (+ the job types this runner serves).' },
	);
	const claim = wf.add({
		name: 'Claim Jobs',
		type: 'n8n-nodes-contracts.pipelineCapture',
		typeVersion: 2,
		position: [480, 100],
		parameters: {
			resource: 'job',
			operation: 'claimJobs',
			jobType: '={{ $json.req.job_types }}',
			batchSize: '={{ $json.req.limit }}',
			options: { worker: '={{ $json.req.worker_id }}', workflow: 'WF90', reuseCredential: true },
		},
		onError: 'continueErrorOutput',
		credentials: PG,
		notes:
			'FOR UPDATE SKIP LOCKED: each due job to exactly one runner; attempts counted; a run id reserved (its job_runs row is written when the attempt ends).',
	});
	const request = wf.set(
		'Job Request',
		[720, 0],
		[
			['req', 'object', '={{ $json.data.payload }}'],
			// Seed 002 §3.1: no object literals in expressions — one dot-notation field each
			['ctx.job_id', 'number', '={{ Number($json.data.id) }}'],
			['ctx.job_claim_token', 'string', '={{ $json.data.claim_token }}'],
			['ctx.correlation_id', 'string', '={{ $json.data.correlation_id || $json.data.payload.correlation_id }}'],
			['ctx.tenant_id', 'string', '={{ $json.data.tenant_id }}'],
			['ctx.trace_id', 'string', '={{ $json.data.payload.trace_id || null }}'],
			['ctx.workflow', 'string', 'WF90'],
			['job.id', 'number', '={{ Number($json.data.id) }}'],
			['job.job_type', 'string', '={{ $json.data.job_type }}'],
			['job.locked_by', 'string', '={{ $json.data.locked_by }}'],
			['job.claim_token', 'string', '={{ $json.data.claim_token }}'],
			// the registry's job_type → worker workflow id, as a chain of comparisons (no object literal)
			[
				'job.worker',
				'string',
				`={{ ${Object.entries(WORKERS)
					.map(([type, worker]) => `$json.data.job_type === ${JSON.stringify(type)} ? ${JSON.stringify(worker)} : `)
					.join('')}"" }}`,
			],
		],
		{
			include: false,
			notes:
				"The job payload is the worker's req; ctx.job_id + ctx.job_claim_token let WF99 retry or fail this attempt of the job on an error (a late error of an attempt that ended is recorded as stale). One field per assignment (seed 002 §3.1: no object literals in expressions).",
		},
	);
	const run = wf.add({
		name: 'Run Worker',
		type: 'n8n-nodes-base.executeWorkflow',
		typeVersion: 1.2,
		position: [960, 0],
		parameters: {
			source: 'database',
			workflowId: { __rl: true, mode: 'id', value: '={{ $json.job.worker }}' },
			mode: 'each',
			options: { waitForSubWorkflow: true },
		},
		onError: 'continueRegularOutput',
		notes:
			'WF20 / WF30 / WF31 / WF32 / WF33 / WF40 / WF41 / WF51 by job_type; answers a SuccessEnvelope or (via WF99) an ErrorEnvelope.',
	});
	const finish = wf.add({
		name: 'Finish Job',
		type: 'n8n-nodes-contracts.pipelineCapture',
		typeVersion: 2,
		position: [1200, 0],
		parameters: {
			resource: 'job',
			operation: 'finishJob',
			jobId: "={{ $('Job Request').item.json.job.id }}",
			worker: "={{ $('Job Request').item.json.job.locked_by }}",
			claimToken: "={{ $('Job Request').item.json.job.claim_token }}",
			success: '={{ $json.ok === true }}',
			retryable: '={{ $json.error ? $json.error.retryable !== false : true }}',
			// a text becomes { message } (Finish Job); seed 002 §3.1: no object literal here
			error: '={{ $json.error || "worker answered no envelope" }}',
			acceptFinished: true,
			options: { workflow: 'WF90', reuseCredential: true },
		},
		onError: 'continueErrorOutput',
		// issue 26: a lost reply (503) is retried with the same claim token; a retry of a committed finish is
		// answered `replayed: true` with its outcome (migration 021), so retrying changes nothing twice
		retryOnFail: true,
		maxTries: 3,
		waitBetweenTries: 1000,
		credentials: PG,
		notes:
			'Succeeded; or failed with retry/dead letter, for this claim only (claim token). A job WF99 already retried, or released and claimed again, is returned as it is.',
	});
	const summary = wf.set(
		'Run Summary',
		[1440, 0],
		[
			['data.picked', 'number', '={{ $input.all().length }}'],
			[
				'data.succeeded',
				'number',
				'={{ $input.all().filter(i => i.json.data && i.json.data.status === "succeeded").length }}',
			],
			[
				'data.failed',
				'number',
				'={{ $input.all().filter(i => !(i.json.data && i.json.data.status === "succeeded")).length }}',
			],
			['ok', 'boolean', '={{ true }}'],
		],
		{ include: false, executeOnce: true, notes: 'Seed 003 WF90 output: { picked, succeeded, failed }.' },
	);
	wf.connect(schedule, settings);
	wf.connect(manual, settings);
	wf.connect(settings, claim);
	wf.connect(claim, request);
	wf.connect(request, run);
	wf.connect(run, finish);
	wf.connect(finish, summary);
	// Pipeline Capture v2: Claim Jobs, Finish Job and Release Stale have one output (Done); the error output is the second
	wf.errorBranch(claim, 720, 'ops.jobs', 1);
	wf.errorBranch(finish, 1440, 'ops.jobs', 1);
	// A job whose runner died (n8n restarted or crashed mid-job) stays `running`: Release Stale gives it back.
	// Issue 26: every n8n process that claims holds a job lease (an advisory lock on a connection of its own,
	// dropped by PostgreSQL when the process dies); a job whose lease is not held for Lease Grace (15 s) is
	// released. Checked every 20 s, a dead worker's jobs are back in the queue 20–40 s after its death
	// (docs/retry-safety.md "Jobs: claims and leases"); a live worker keeps its jobs however long a step runs.
	const staleSchedule = wf.add({
		name: 'Every 20 Seconds',
		type: 'n8n-nodes-base.scheduleTrigger',
		typeVersion: 1.2,
		position: [0, 440],
		parameters: { rule: { interval: [{ field: 'seconds', secondsInterval: 20 }] } },
	});
	const release = wf.add({
		name: 'Release Stale',
		type: 'n8n-nodes-contracts.pipelineCapture',
		typeVersion: 2,
		position: [240, 440],
		parameters: {
			resource: 'job',
			operation: 'releaseStale',
			olderThanSeconds: 900,
			limit: 500,
			leaseGraceSeconds: 15,
			leaseMaxSeconds: 7200,
			options: { workflow: 'WF90', reuseCredential: true },
		},
		onError: 'continueErrorOutput',
		credentials: PG,
		notes:
			"Jobs whose runner's process died (its lease not held for 15 s) go back to the queue, or dead when no attempt is left; jobs without a lease after 15 min, any job after 2 h (Lease Max: a hung step, or a Claim Jobs reply lost and never retried). The claim token is cleared, so a late error or Finish Job of the dead runner changes nothing.",
	});
	wf.connect(staleSchedule, release);
	wf.errorBranch(release, 480, 'ops.jobs', 1, 440); // joins Claim Jobs' Prepare DB Error → Call WF99
	wf.write('WF90_job_runner.json');
})();
