/**
 * Credential test for PostgresContractsApi, registered by every node that uses it
 * (`methods.credentialTest.postgresContractsApiTest`): connects with the entered values and runs
 * `SELECT 1`; the failure message is pg's own (wrong password, unknown database, refused connection),
 * with the password redacted (as is, URL-encoded, Base64) and any URL user info. A connection string or
 * user info in Host, Database or User is refused first, naming the field without quoting it.
 */
import type { ICredentialTestFunctions, ICredentialsDecrypted, INodeCredentialTestResult } from 'n8n-workflow';
import { Client } from 'pg';
import {
	poolConfig,
	postgresCredentialProblem,
	postgresRedactor,
	redactPostgresText,
	type PostgresCredential,
} from './pool';

export async function postgresContractsApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const data = (credential.data ?? {}) as unknown as PostgresCredential;
	const redact = postgresRedactor(data);
	const problem = postgresCredentialProblem(data);
	if (problem) return { status: 'Error', message: problem };
	const config = poolConfig(data);
	const client = new Client({ ...config, connectionTimeoutMillis: 5_000 });
	client.on('error', () => undefined);
	try {
		await client.connect();
		await client.query('SELECT 1');
		return { status: 'OK', message: 'Connection successful' };
	} catch (error) {
		return {
			status: 'Error',
			message: redactPostgresText(redact, error instanceof Error ? error.message || String(error) : String(error)),
		};
	} finally {
		await client.end().catch(() => undefined);
	}
}
