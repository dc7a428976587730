/**
 * Issue 25 §2: every shipped workflow names the catch-all error workflow (settings.errorWorkflow), and the
 * catch-all is an Error Trigger → Error Pipe that records once per failed execution under its own source.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import { ErrorEnvelope } from '../../nodes/shared/contracts/envelope';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { shippedWorkflows } from '../helpers/shippedWorkflows';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { CATCH_ALL } = require('../../scripts/lib/workflowBuilder');

interface Workflow {
	id: string;
	name: string;
	nodes: Array<{ name: string; type: string; parameters: Record<string, unknown> }>;
	connections: Record<string, { main: Array<Array<{ node: string }>> }>;
	settings: Record<string, unknown>;
}

const workflows = shippedWorkflows<Workflow>();

test('every shipped workflow names the catch-all as its error workflow', () => {
	assert.ok(workflows.length >= 35);
	const without = workflows.filter((w) => w.workflow.settings?.errorWorkflow !== CATCH_ALL.id).map((w) => w.file);
	assert.deepEqual(without, []);
});

test('the catch-all: shipped once, an Error Trigger into an Error Pipe recording once per failed execution', () => {
	const found = workflows.filter((w) => w.workflow.id === CATCH_ALL.id);
	assert.deepEqual(
		found.map((w) => [w.file, w.workflow.name]),
		[['WF99e_catch_all.json', CATCH_ALL.name]],
	);
	const wf = found[0].workflow;
	const trigger = wf.nodes.filter((n) => n.type === 'n8n-nodes-base.errorTrigger');
	const pipe = wf.nodes.filter((n) => n.type === 'n8n-nodes-contracts.errorPipe');
	assert.equal(trigger.length, 1);
	assert.equal(pipe.length, 1);
	assert.deepEqual(wf.connections[trigger[0].name].main[0], [{ node: pipe[0].name, type: 'main', index: 0 }]);
	assert.equal(pipe[0].parameters.oncePerExecution, true);
	assert.match(String(pipe[0].parameters.source), /catch-all/);
	// no other shipped workflow has an Error Trigger (n8n would run it as its own error workflow)
	assert.deepEqual(
		workflows.filter((w) => w.workflow.nodes.some((n) => n.type === 'n8n-nodes-base.errorTrigger')).map((w) => w.file),
		['WF99e_catch_all.json'],
	);
});

test("the Error Trigger's item: execution id, workflow and node in the envelope; node parameters not copied", () => {
	const { envelope, executionId } = normalizeErrorItem(
		{
			execution: {
				id: '231',
				url: 'http://127.0.0.1:5678/workflow/W/executions/231',
				error: {
					message: 'boom',
					httpCode: '502',
					node: { name: 'Fetch', type: 'n8n-nodes-base.httpRequest', parameters: { headerValue: 's3cret' } },
				},
				lastNodeExecuted: 'Fetch',
				mode: 'trigger',
				retryOf: null,
				executionContext: { version: 1, parentExecutionId: '230', credentials: 'opaque' },
			},
			workflow: { id: 'WF31UrlFetcher', name: 'WF31 — URL Fetcher' },
		},
		{ source: 'WF99e catch-all', executionId: '230' },
	);
	ErrorEnvelope.parse(envelope);
	assert.equal(executionId, '231', "the item's execution wins over the execution context's");
	assert.equal(envelope.error.details.execution_id, '231');
	assert.equal(envelope.meta.correlation.workflow, 'WF31 — URL Fetcher');
	assert.equal(envelope.meta.correlation.node, 'Fetch');
	assert.equal(envelope.meta.source, 'WF99e catch-all');
	assert.equal(envelope.status_code, 502);
	assert.equal(envelope.error.kind, 'upstream');
	assert.deepEqual(envelope.error.details.execution, {
		id: '231',
		mode: 'trigger',
		lastNodeExecuted: 'Fetch',
		url: 'http://127.0.0.1:5678/workflow/W/executions/231',
		parentExecutionId: '230',
		workflow: { id: 'WF31UrlFetcher', name: 'WF31 — URL Fetcher' },
		error: { message: 'boom', httpCode: '502', node: { name: 'Fetch', type: 'n8n-nodes-base.httpRequest' } },
	});
	assert.equal(envelope.error.details.input, undefined);
	assert.ok(!JSON.stringify(envelope).includes('s3cret'));
	assert.ok(!JSON.stringify(envelope).includes('opaque'));
});

test('an execution id that cannot key a row is kept as text, not used', () => {
	const { executionId, envelope } = normalizeErrorItem(
		{ execution: { id: 'a\u0000b', error: { message: 'm' } }, workflow: { id: 'W' } },
		{ source: 'x' },
	);
	assert.equal(executionId, null);
	assert.equal(envelope.error.details.execution_id, undefined);
	assert.equal(typeof envelope.error.details.invalid_execution_id, 'string');
	// an error branch's item: the execution the Error Pipe was called by
	assert.equal(normalizeErrorItem({ message: 'm' }, { source: 'WF99', executionId: '77' }).executionId, '77');
	assert.equal(normalizeErrorItem({ message: 'm' }, { source: 'WF99' }).executionId, null);
});

test("an error branch's item: the engine's execution wins over any the item names (kept as item_execution_id)", () => {
	const hostile = {
		message: 'm',
		error_context: { execution_id: '999999' },
		ctx: { execution_id: '999998' },
		execution: { id: '999997' },
	};
	const { executionId, envelope } = normalizeErrorItem(hostile, { source: 'WF99', executionId: '77' });
	assert.equal(executionId, '77');
	assert.equal(envelope.error.details.execution_id, '77');
	assert.equal(envelope.error.details.item_execution_id, '999999');
	// not an Error Trigger's item (no workflow): its `execution` is not read, and kept in details.input
	assert.deepEqual((envelope.error.details.input as Record<string, unknown>).execution, { id: '999997' });
	assert.equal(envelope.error.details.execution, undefined);
	// the same id as the engine's: no item_execution_id
	const same = normalizeErrorItem({ message: 'm', ctx: { execution_id: '77' } }, { source: 'WF99', executionId: '77' });
	assert.equal(same.envelope.error.details.item_execution_id, undefined);
});

test("Once per Failed Execution: only the Error Trigger's execution.id names the execution (a failed trigger: none)", () => {
	const options = { source: 'WF99e catch-all', executionId: '500', oncePerExecution: true, instanceId: 'inst-1' };
	const trigger = normalizeErrorItem(
		{ trigger: { error: { message: 'activation failed' }, mode: 'trigger' }, workflow: { id: 'W', name: 'W' } },
		options,
	);
	assert.equal(trigger.executionId, null, "not WF99e's own execution");
	assert.equal(trigger.envelope.error.details.execution_id, undefined);
	assert.equal(trigger.envelope.error.details.instance_id, 'inst-1');
	const ctxOnly = normalizeErrorItem({ message: 'm', ctx: { execution_id: '12' } }, options);
	assert.equal(ctxOnly.executionId, null);
	const item = normalizeErrorItem(
		{ execution: { id: '13', lastNodeExecuted: 'Last', error: { message: 'm' } }, workflow: { id: 'W' } },
		options,
	);
	assert.equal(item.executionId, '13');
	assert.equal(item.failedNode, 'Last');
});
