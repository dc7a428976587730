/**
 * Credential test of ArangoDbApi (registered by ArangoCAS as `arangoDbApiTest`):
 * `GET /_db/{database}/_api/version` with the entered URL, database and authentication.
 */
import type { ICredentialTestFunctions, ICredentialsDecrypted, INodeCredentialTestResult } from 'n8n-workflow';
import { Database } from 'arangojs';
import { databaseConfig, type ArangoCredential } from './database';

export async function arangoDbApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const db = new Database({ ...databaseConfig(credential.data as unknown as ArangoCredential), timeout: 10_000 });
	try {
		const version = await db.version(false);
		return { status: 'OK', message: `Connected: ArangoDB ${version.version}` };
	} catch (error) {
		return { status: 'Error', message: (error as Error).message };
	} finally {
		db.close();
	}
}
