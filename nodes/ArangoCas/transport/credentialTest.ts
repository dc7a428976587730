/**
 * Credential test of ArangoDbApi (registered by ArangoCAS as `arangoDbApiTest`):
 * `GET /_db/{database}/_api/version` with the entered URL, database and authentication. A URL that is not
 * http(s) (no scheme, whitespace, user info) fails with a message naming the field; every failure
 * message has the password and the JWT redacted.
 */
import type { ICredentialTestFunctions, ICredentialsDecrypted, INodeCredentialTestResult } from 'n8n-workflow';
import { Database } from 'arangojs';
import { arangoRedactor, databaseConfig, type ArangoCredential } from './database';

export async function arangoDbApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const data = (credential.data ?? {}) as unknown as ArangoCredential;
	const redact = arangoRedactor(data);
	let db: Database;
	try {
		db = new Database({ ...databaseConfig(data), timeout: 10_000 });
	} catch (error) {
		return { status: 'Error', message: redact.describe(error).replace(/^\w*Error: /, '') };
	}
	try {
		const version = await db.version(false);
		return { status: 'OK', message: `Connected: ArangoDB ${version.version}` };
	} catch (error) {
		const cause = (error as { cause?: unknown }).cause;
		const detail = cause instanceof Error && cause.message !== (error as Error).message ? ` (${cause.message})` : '';
		return { status: 'Error', message: redact.string(`${(error as Error).message}${detail}`) };
	} finally {
		db.close();
	}
}
