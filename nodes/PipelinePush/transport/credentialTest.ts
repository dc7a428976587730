/**
 * Credential test of Contracts Push API (`methods.credentialTest.contractsPushApiTest`): the secret must be
 * at least MIN_PUSH_SECRET_LENGTH characters. There is nothing to connect to; the secret is never quoted.
 */
import type { ICredentialTestFunctions, ICredentialsDecrypted, INodeCredentialTestResult } from 'n8n-workflow';
import { MIN_PUSH_SECRET_LENGTH } from './token';

export async function contractsPushApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const secret = (credential.data ?? {}).secret;
	if (typeof secret !== 'string' || secret.length < MIN_PUSH_SECRET_LENGTH)
		return {
			status: 'Error',
			message: `Token Secret (secret): at least ${MIN_PUSH_SECRET_LENGTH} characters (has ${typeof secret === 'string' ? secret.length : 0})`,
		};
	return { status: 'OK', message: 'Token Secret is long enough' };
}
