/**
 * The Resource/Operation dropdowns (nodes/shared/node/resources.ts) and a resource's former values: a
 * renamed resource is offered under its new value only, while a workflow saved with a former value keeps
 * its Operation and fields (shown for both values) and is routed to the same operations.
 */
import assert from 'node:assert/strict';
import { test } from '@jest/globals';
import type { INodeProperties } from 'n8n-workflow';
import { resourceProperties, withFormerValues, type ResourceSpec } from '../../nodes/shared/node/resources';
import { findOperation } from '../../nodes/shared/node/router';

const field = (resource: string, operation: string): INodeProperties => ({
	displayName: 'Bot ID',
	name: 'botId',
	type: 'string',
	default: '',
	displayOptions: { show: { resource: [resource], operation: [operation] } },
});
const check = {
	value: 'check',
	name: 'Check',
	action: 'Check the bot',
	description: 'Checks',
	fields: [field('botTransport', 'check')],
};
const url = { value: 'normalize', name: 'Normalize', action: 'Normalize a URL', description: 'Normalizes' };
const RESOURCES: ResourceSpec[] = [
	{ value: 'url', name: 'URL', operations: [url] },
	{ value: 'botTransport', name: 'Bot Transport', formerValues: ['transport'], operations: [check] },
];

test('the Resource dropdown offers the current values only; an Operation dropdown and fields show for former values too', () => {
	const [resource, urlOps, botOps, botField] = resourceProperties(RESOURCES);
	assert.deepEqual(
		resource.options?.map((o) => ('value' in o ? o.value : undefined)),
		['url', 'botTransport'],
	);
	assert.deepEqual(urlOps.displayOptions?.show?.resource, ['url']);
	assert.deepEqual(botOps.displayOptions?.show?.resource, ['botTransport', 'transport']);
	assert.deepEqual(botField.displayOptions?.show, { resource: ['botTransport', 'transport'], operation: ['check'] });
	assert.deepEqual(
		check.fields[0].displayOptions?.show?.resource,
		['botTransport'],
		'the operation itself is not changed',
	);
});

test('withFormerValues: a former value finds the same operation object; unknown values are still refused', () => {
	const routed = withFormerValues(RESOURCES);
	assert.equal(findOperation(routed, 'transport', 'check'), check);
	assert.equal(findOperation(routed, 'botTransport', 'check'), check);
	assert.throws(
		() => findOperation(RESOURCES, 'transport', 'check', 'KnowledgeBot'),
		/unknown KnowledgeBot operation transport\/check/,
	);
	assert.throws(() => findOperation(routed, 'transport', 'normalize'), /unknown node operation/);
	assert.deepEqual(withFormerValues([RESOURCES[0]]), [RESOURCES[0]], 'no former values: the list as it is');
});
