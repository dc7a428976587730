import type { ICredentialType, INodeProperties } from 'n8n-workflow';
import { docsUrl } from '../nodes/shared/docsUrl';

/**
 * The secret of Pipeline Push (seed 001 §3 step 4, variant B): a client's token is
 * `"v2." + exp + "." + base64url(HMAC-SHA256(secret, "contracts-push:v2:" + exp + ":" + user_id))`, `exp` its
 * expiry in Unix seconds (nodes/PipelinePush/transport/token.ts, `node scripts/mint-push-token.js --user alice
 * --expires-in 1h`). At least 32 characters; rotating it revokes every token.
 * Tested by the node's `contractsPushApiTest` (length only: nothing to connect to). Never logged.
 */
export class ContractsPushApi implements ICredentialType {
	name = 'contractsPushApi';

	displayName = 'Contracts Push API';

	icon = 'file:contractsPush.svg' as const;

	documentationUrl = docsUrl('credentials.md#contracts-push-api');

	properties: INodeProperties[] = [
		{
			displayName: 'Token Secret',
			name: 'secret',
			type: 'string',
			typeOptions: { password: true },
			required: true,
			default: '',
			description:
				'A random secret of at least 32 random bytes (`openssl rand -base64 32`), never a word or a reused password: whoever guesses it can mint a token for any user. Push tokens are HMAC-SHA256 of the user ID and an expiry with it (they expire); rotating it revokes every token.',
		},
	];
}
