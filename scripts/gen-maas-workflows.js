#!/usr/bin/env node
'use strict';
/**
 * Writes the MaaS step workflows M11 (analysis), M12 (assembly) and M13 (response) of seed 005 into
 * workflows-json/maas/ from one description of a step (STEPS below: what differs per step is data).
 * Each is: Execute Workflow Trigger (a run row) → Capture (CAPTURE_<STEP>: exactly one worker goes on) →
 * Load Step Context → Generate (model call) → Complete Step (<STEP>_DONE + result, capture-token holder only);
 * every Pipeline Capture's error output → ERR — Source → Prepare DB Error → WF99 (seed 002 §2.3), and for
 * Load Step Context and Generate the run is then failed with WF99's envelope (Fail Error → Fail Run).
 * Node ids are derived from the workflow and node names (scripts/lib/workflowBuilder.js).
 *
 * To regenerate: edit here, run `node scripts/gen-maas-workflows.js`, commit both.
 * `node scripts/gen-maas-workflows.js <dir>` writes into <dir> instead (test/unit/maasWorkflows.test.ts compares).
 * (The workflows stay editable on the canvas; this script only keeps the shipped copies consistent.)
 */
const {
	CALL_WF99_PARAMETERS,
	LLM,
	PG,
	PREPARE_DB_ERROR,
	outputDir,
	workflowBuilder,
} = require('./lib/workflowBuilder');

const OUT = outputDir(process.argv, 'maas');
const PIPELINE_CAPTURE = 'n8n-nodes-contracts.pipelineCapture';
const PIPELINE_CAPTURE_VERSION = 2;
/**
 * Pipeline Capture v2's error output (n8n appends it after the operation's outputs): Capture has Done and
 * Not Captured, every other operation Done only (PipelineOperation.outputs; test/unit/pipelineCaptureOutputs.test.ts
 * checks every shipped workflow against the node).
 */
const errorOutput = (operation) => (operation === 'capture' ? 2 : 1);
const RUNS_TABLE = 'maas.pipeline_runs';

/**
 * One MaaS step per entry (seed 005): `workflow` the short name (ctx.workflow), `id`/`name`/`file` of the
 * workflow, `step` the pipeline step Load Step Context reads, `capture`/`done` its two transitions,
 * `generate` the Generate node's model parameters, `complete` Complete Step's result (+ extra) parameters.
 */
const STEPS = [
	{
		workflow: 'M11',
		id: 'M11Analyzer',
		name: 'M11 — MaaS Analyzer',
		file: 'M11_analyzer.json',
		step: 'analysis',
		capture: 'CAPTURE_ANALYSIS',
		done: 'ANALYSIS_DONE',
		generate: {
			system:
				'={{ $json.data.prompt || "Analyse the user\'s query. Answer JSON: { needs_context, context_type, time_scope, search_keywords, context_found }." }}',
			input: '={{ JSON.stringify({ user_query: $json.data.user_query, lsm_summary: $json.data.lsm }) }}',
			expectJson: true,
			temperature: 0.2,
			maxTokens: 800,
		},
		complete: { result: '={{ $json.data.json }}' },
	},
	{
		workflow: 'M12',
		id: 'M12Assembler',
		name: 'M12 — MaaS Assembler',
		file: 'M12_assembler.json',
		step: 'assembly',
		capture: 'CAPTURE_ASSEMBLY',
		done: 'ASSEMBLY_DONE',
		generate: {
			system:
				'={{ $json.data.assembler_prompt || "Optimise the draft into the final context: drop what is irrelevant, focus on the query, structure it with XML tags, stay under 8000 tokens." }}',
			input: '={{ $json.data.draft_context }}',
			temperature: 0.3,
			maxTokens: 8000,
		},
		complete: {
			result: '={{ $json.data.text }}',
			draftContext: "={{ $('Load Step Context').item.json.data.draft_context }}",
		},
	},
	{
		workflow: 'M13',
		id: 'M13FinalResp',
		name: 'M13 — MaaS Final Responder',
		file: 'M13_final_responder.json',
		step: 'response',
		capture: 'CAPTURE_RESPONSE',
		done: 'RESPONSE_DONE',
		generate: {
			system: '={{ $json.data.prompt || "" }}',
			input: '={{ $json.data.final_context_payload }}',
			temperature: 0.7,
			maxTokens: 2000,
			timeoutMs: 30000,
			maxRetries: 3,
			backoffBaseMs: 1000,
			rateLimitWaitMs: 60000,
		},
		complete: { result: '={{ $json.data.text }}' },
	},
];

/**
 * n8n's Retry On Fail for the run operations whose retry after a lost reply is a replay (issue 26,
 * docs/retry-safety.md "Pipeline runs": Capture, Complete Step, Fail). n8n 2.4.8 re-runs the node while its
 * first output item is an error item, before the error output gets it: 3 tries, 1000 ms apart; the same
 * execution, node, run index and item, so the same call key.
 */
const RETRY_ON_FAIL = { retryOnFail: true, maxTries: 3, waitBetweenTries: 1000 };

/** A Pipeline Capture node at [x, y] with the error output on (and `extra` node settings, e.g. RETRY_ON_FAIL). */
function pipelineCapture(name, [x, y], parameters, notes, credentials = PG, extra = {}) {
	return {
		name,
		type: PIPELINE_CAPTURE,
		typeVersion: PIPELINE_CAPTURE_VERSION,
		position: [x, y],
		parameters,
		...extra,
		onError: 'continueErrorOutput',
		credentials,
		notes,
	};
}

function stepWorkflow(s) {
	const wf = workflowBuilder(s.id, s.name);
	// Reuse Credential for 5 Seconds: the shipped credential is static (issue 29 P7: n8n's credential read per call)
	const options = { workflow: s.workflow, reuseCredential: true };
	const trigger = wf.add({
		name: 'When Called by Another Workflow',
		type: 'n8n-nodes-base.executeWorkflowTrigger',
		typeVersion: 1.1,
		position: [0, 0],
		parameters: { inputSource: 'passthrough' },
	});
	const capture = wf.add(
		pipelineCapture(
			'Capture',
			[240, 0],
			{ resource: 'run', operation: 'capture', runId: '={{ $json.id }}', transition: s.capture, options },
			`${s.capture}: exactly one worker goes on; the others stop on Not Captured. Retry On Fail: a retry after a lost reply gets the same capture back (replayed).`,
			PG,
			RETRY_ON_FAIL,
		),
	);
	const load = wf.add(
		pipelineCapture(
			'Load Step Context',
			[480, 0],
			{ resource: 'run', operation: 'loadStepContext', runId: '={{ $json.data.run_id }}', step: s.step, options },
			'',
		),
	);
	const generate = wf.add(
		pipelineCapture(
			'Generate',
			[720, 0],
			{ ...s.generate, resource: 'model', operation: 'generate', options },
			'Model call with the seed-001 retry policy.',
			{ ...PG, ...LLM },
		),
	);
	const complete = wf.add(
		pipelineCapture(
			'Complete Step',
			[960, 0],
			{
				resource: 'run',
				operation: 'completeStep',
				runId: "={{ $('Capture').item.json.data.run_id }}",
				transition: s.done,
				captureToken: "={{ $('Capture').item.json.data.capture_token }}",
				options,
				...s.complete,
			},
			`${s.done}: result + next state in one statement (capture-token holder only). Retry On Fail: a retry after a lost reply is answered replayed.`,
			PG,
			RETRY_ON_FAIL,
		),
	);
	wf.connect(trigger, capture);
	wf.connect(capture, load);
	wf.connect(load, generate);
	wf.connect(generate, complete);

	// After the capture each error branch has its own Prepare DB Error / Call WF99; the ctx carries the run_id.
	// A failed Load Step Context or Generate then fails the run; a failed Complete Step does not (another worker
	// may hold the run after a release): the Sweep releases it instead.
	[
		[load, 'loadStepContext', 260, true],
		[generate, 'generate', 520, true],
		[complete, 'completeStep', 780, false],
	].forEach(([source, operation, y, failRun]) => {
		const err = wf.set(
			`ERR — Source ${source}`,
			[480, y],
			[
				['_err.node', 'string', source],
				['_err.operation', 'string', '={{ $json.error.error_context.operation }}'],
				['_err.table', 'string', `={{ $json.error.error_context.table || "${RUNS_TABLE}" }}`],
				['_ctx', 'object', "={{ Object.assign({}, $json.error.ctx, { run_id: $('Capture').item.json.data.run_id }) }}"],
			],
			{ notes: 'Seed 002 §2.3 stamps; ctx carries the run_id so the run can be failed after WF99.' },
		);
		const prepare = wf.set(`Prepare DB Error (${source})`, [720, y], PREPARE_DB_ERROR);
		const call = wf.add({
			name: `Call WF99 (${source})`,
			type: 'n8n-nodes-base.executeWorkflow',
			typeVersion: 1.2,
			position: [960, y],
			parameters: CALL_WF99_PARAMETERS,
			notes: 'ErrorEnvelope + ops.errors row.',
		});
		wf.connect(source, err, errorOutput(operation));
		wf.connect(err, prepare);
		wf.connect(prepare, call);
		if (!failRun) return;
		const failError = wf.set(
			`Fail Error (${source})`,
			[1200, y],
			[
				['fail_error.message', 'string', '={{ $json.public.message }}'],
				['fail_error.kind', 'string', '={{ $json.public.kind }}'],
				['fail_error.status_code', 'number', '={{ $json.public.status_code }}'],
				['fail_error.correlation_id', 'string', '={{ $json.meta.correlation.correlation_id }}'],
			],
			{
				notes:
					"The run's error from WF99's public answer (issue 25 §4: never the internal message), one field per assignment (seed 002 §3.1: no object literals in expressions).",
			},
		);
		const failRunNode = wf.add(
			pipelineCapture(
				`Fail Run (${source})`,
				[1440, y],
				{
					resource: 'run',
					operation: 'fail',
					runId: '={{ $json.error.details.ctx.run_id }}',
					error: '={{ $json.fail_error }}',
					options: { reuseCredential: true },
				},
				"The run ends FAILED with the envelope's error: nothing stays stuck. Retry On Fail: a retry after a lost reply is answered replayed.",
				PG,
				RETRY_ON_FAIL,
			),
		);
		wf.connect(call, failError);
		wf.connect(failError, failRunNode);
	});

	// The capture itself failed: no run of this worker to fail; WF99 records it.
	const err = wf.set(
		'ERR — Source Capture',
		[480, 1040],
		[
			['_err.node', 'string', capture],
			['_err.operation', 'string', '={{ $json.error.error_context.operation }}'],
			['_err.table', 'string', `={{ $json.error.error_context.table || "${RUNS_TABLE}" }}`],
			['_ctx', 'object', '={{ $json.error.ctx }}'],
		],
		{ notes: 'Seed 002 §2.3: stamps the error source and glues _ctx.' },
	);
	const prepare = wf.set('Prepare DB Error', [720, 1040], PREPARE_DB_ERROR, {
		notes: 'Seed 002 §2.3: error_context.* and ctx for the Error Pipe.',
	});
	const call = wf.add({
		name: 'Call WF99',
		type: 'n8n-nodes-base.executeWorkflow',
		typeVersion: 1.2,
		position: [960, 1040],
		parameters: CALL_WF99_PARAMETERS,
		notes: 'WF99: ErrorEnvelope + ops.errors row.',
	});
	wf.connect(capture, err, errorOutput('capture'));
	wf.connect(err, prepare);
	wf.connect(prepare, call);
	wf.write(OUT, s.file);
}

STEPS.forEach(stepWorkflow);
