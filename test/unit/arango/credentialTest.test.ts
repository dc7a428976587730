/**
 * The ArangoDbApi credential test: it calls GET /_db/{database}/_api/version with the credential's
 * authentication (basic or JWT) and reports the server's error, or the network failure, as status Error.
 * (The reference file has no /_api/version answer, so the replies here are its real error shapes.)
 */
import assert from 'node:assert/strict';
import { afterEach, test } from '@jest/globals';
import type { ICredentialTestFunctions, ICredentialsDecrypted } from 'n8n-workflow';
import nock from 'nock';
import { arangoDbApiTest } from '../../../nodes/ArangoCas/transport/credentialTest';
import { ARANGO_DB, ARANGO_URL, ArangoStub, realResponses } from '../../helpers/arangoHttp';

afterEach(() => ArangoStub.reset());

const credential = (data: Record<string, unknown>) =>
	({ id: '1', name: 'ArangoDB', type: 'arangoDbApi', data }) as unknown as ICredentialsDecrypted;

test('basic auth: GET /_db/<db>/_api/version with Authorization Basic; a server error is reported', async () => {
	new ArangoStub();
	const reply = realResponses().RestCursorCreateCursorUnknownCollection_single;
	let auth: string | undefined;
	nock(ARANGO_URL)
		.get(`/_db/${ARANGO_DB}/_api/version`)
		.query({ details: 'false' })
		.reply(function () {
			auth = this.req.headers.authorization as string;
			return [reply.status, { ...reply.body, errorMessage: 'database not found' }];
		});
	const result = await arangoDbApiTest.call(
		{} as ICredentialTestFunctions,
		credential({ url: ARANGO_URL, database: ARANGO_DB, authMode: 'basic', username: 'root', password: 'pw' }),
	);
	assert.equal(auth, `Basic ${Buffer.from('root:pw').toString('base64')}`);
	assert.equal(result.status, 'Error');
	assert.match(result.message, /database not found/);
});

test('JWT: the token is sent as a bearer; an unreachable server is reported', async () => {
	new ArangoStub();
	let auth: string | undefined;
	nock(ARANGO_URL)
		.get(`/_db/${ARANGO_DB}/_api/version`)
		.query({ details: 'false' })
		.reply(function () {
			auth = this.req.headers.authorization as string;
			return [503, { error: true, code: 503, errorNum: 503, errorMessage: 'service unavailable' }];
		});
	const result = await arangoDbApiTest.call(
		{} as ICredentialTestFunctions,
		credential({ url: ARANGO_URL, database: ARANGO_DB, authMode: 'jwt', token: 'abc.def.ghi' }),
	);
	assert.match(String(auth), /^bearer abc\.def\.ghi$/i);
	assert.equal(result.status, 'Error');
	const refused = await arangoDbApiTest.call(
		{} as ICredentialTestFunctions,
		credential({ url: 'http://127.0.0.1:1', database: ARANGO_DB }),
	);
	assert.equal(refused.status, 'Error');
});
