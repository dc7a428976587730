import type { ICredentialType, INodeProperties } from 'n8n-workflow';
import { docsUrl } from '../nodes/shared/docsUrl';

/**
 * ArangoDB connection of the ArangoCAS node: server URL, database, and either username/password
 * (HTTP Basic) or a JWT (Bearer). Tested by the node's `arangoDbApiTest`
 * (`GET /_db/{database}/_api/version`).
 */
export class ArangoDbApi implements ICredentialType {
	name = 'arangoDbApi';

	displayName = 'ArangoDB API';

	icon = 'file:arangoDb.svg' as const;

	documentationUrl = docsUrl('credentials.md#arangodb-api');

	properties: INodeProperties[] = [
		{
			displayName: 'URL',
			name: 'url',
			type: 'string',
			default: 'http://127.0.0.1:8529',
			placeholder: 'http://arangodb:8529',
			description: 'Base URL of the ArangoDB server (coordinator in a cluster)',
		},
		{ displayName: 'Database', name: 'database', type: 'string', default: '_system' },
		{
			displayName: 'Authentication',
			name: 'authMode',
			type: 'options',
			options: [
				{ name: 'Username and Password', value: 'basic' },
				{ name: 'JWT', value: 'jwt' },
			],
			default: 'basic',
		},
		{
			displayName: 'Username',
			name: 'username',
			type: 'string',
			default: 'root',
			displayOptions: { show: { authMode: ['basic'] } },
		},
		{
			displayName: 'Password',
			name: 'password',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			displayOptions: { show: { authMode: ['basic'] } },
		},
		{
			displayName: 'Token',
			name: 'token',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: 'A JWT accepted by the server (sent as Authorization: bearer …)',
			displayOptions: { show: { authMode: ['jwt'] } },
		},
		{
			displayName: 'Request Timeout (Ms)',
			name: 'timeoutMs',
			type: 'number',
			typeOptions: { minValue: 0 },
			default: 30000,
			description:
				'Milliseconds after which a request to ArangoDB is aborted (0 = no limit); the item then fails with a retryable 503',
		},
	];
}
