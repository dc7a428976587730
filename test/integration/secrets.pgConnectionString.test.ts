/**
 * A password pasted into the PostgreSQL credential as a connection string (review of issue 10 item 5):
 * Host, Database or User holding `postgres://app:<pw>@db.invalid:5432/contracts` is refused with a message
 * that names the field and quotes nothing — by the credential test, by getPool and by the Pipeline
 * Trigger — and the trigger's start() failure never carries the password.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from '@jest/globals';
import type { ICredentialTestFunctions, ICredentialsDecrypted, ITriggerFunctions } from 'n8n-workflow';
import { fromPgError } from '../../nodes/shared/errors';
import { postgresContractsApiTest } from '../../nodes/shared/postgres/credentialTest';
import { getPool, type PostgresCredential } from '../../nodes/shared/postgres/pool';

// the source node, by its .ts file: "PipelineTrigger.node" alone would resolve to the codex .json beside it
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { PipelineTrigger } =
	require('../../nodes/PipelineTrigger/PipelineTrigger.node.ts') as typeof import('../../nodes/PipelineTrigger/PipelineTrigger.node');

const PW = `Sup3rSecretPw${randomBytes(6).toString('hex')}`;
const URL_WITH_PW = `postgres://app:${PW}@db.invalid:5432/contracts`;
const base: PostgresCredential = {
	host: '127.0.0.1',
	port: 5432,
	database: 'postgres',
	user: 'postgres',
	password: '',
	ssl: 'disable',
};

function clean(what: string, text: string) {
	assert.ok(!text.includes(PW), `${what} quotes the password: ${text}`);
}

function triggerContext(credential: PostgresCredential, warnings: string[]): ITriggerFunctions {
	return {
		getCredentials: async () => credential,
		getNodeParameter: (_name: string, fallback: unknown) => fallback,
		logger: {
			warn: (m: string) => warnings.push(m),
			info: () => undefined,
			debug: () => undefined,
			error: (m: string) => warnings.push(m),
		},
		emit: () => undefined,
		helpers: { returnJsonArray: (x: unknown) => x },
	} as unknown as ITriggerFunctions;
}

async function thrown(run: () => Promise<unknown> | unknown): Promise<Error> {
	try {
		await run();
	} catch (error) {
		return error as Error;
	}
	assert.fail('expected a failure');
}

test('a connection string in Host, Database or User is refused by name, never quoted', async () => {
	for (const field of ['host', 'database', 'user'] as const) {
		const credential = { ...base, [field]: URL_WITH_PW };
		const result = await postgresContractsApiTest.call(
			{} as ICredentialTestFunctions,
			{ id: '1', name: 'c', type: 'postgresContractsApi', data: credential } as unknown as ICredentialsDecrypted,
		);
		assert.equal(result.status, 'Error', field);
		assert.match(result.message, new RegExp(`\\(${field}\\)`));
		clean(`credential test (${field})`, result.message);
		const error = await thrown(() => getPool(credential));
		assert.match(error.message, new RegExp(`\\(${field}\\)`));
		clean(`getPool (${field})`, `${error.message} ${error.stack} ${JSON.stringify(error)}`);
		const warnings: string[] = [];
		const started = await thrown(() => new PipelineTrigger().trigger.call(triggerContext(credential, warnings)));
		assert.match(started.message, new RegExp(`\\(${field}\\)`));
		clean(`trigger (${field})`, `${started.message} ${started.stack} ${JSON.stringify(started)} ${warnings.join(' ')}`);
	}
	const pgLike = Object.assign(new Error(`getaddrinfo ENOTFOUND ${URL_WITH_PW}`), { code: 'ENOTFOUND' });
	clean('fromPgError', JSON.stringify(fromPgError(pgLike, {}).message));
});

test("the trigger's start() failure is redacted (pg quoting a value that holds the password)", async () => {
	const credential = { ...base, password: PW, database: `nodb_${PW}` };
	const warnings: string[] = [];
	const error = await thrown(() => new PipelineTrigger().trigger.call(triggerContext(credential, warnings)));
	assert.match(error.message, /does not exist/);
	clean('trigger start', `${error.message} ${error.stack} ${warnings.join(' ')}`);
});
