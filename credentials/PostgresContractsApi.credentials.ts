import type { ICredentialType, INodeProperties } from 'n8n-workflow';
import { docsUrl } from '../nodes/shared/docsUrl';

/**
 * PostgreSQL connection used by every node of this package (TelegramIngest, ErrorPipe, …).
 * Tested by the nodes' `postgresContractsApiTest` (connect + `SELECT 1`).
 */
export class PostgresContractsApi implements ICredentialType {
	name = 'postgresContractsApi';

	displayName = 'Contracts PostgreSQL';

	icon = 'file:postgresContracts.svg' as const;

	documentationUrl = docsUrl('credentials.md#contracts-postgresql');

	properties: INodeProperties[] = [
		{ displayName: 'Host', name: 'host', type: 'string', default: 'localhost' },
		{ displayName: 'Port', name: 'port', type: 'number', default: 5432 },
		{ displayName: 'Database', name: 'database', type: 'string', default: 'postgres' },
		{ displayName: 'User', name: 'user', type: 'string', default: 'postgres' },
		{
			displayName: 'Password',
			name: 'password',
			type: 'string',
			typeOptions: { password: true },
			default: '',
		},
		{
			displayName: 'SSL',
			name: 'ssl',
			type: 'options',
			options: [
				{ name: 'Disable', value: 'disable', description: 'Plain TCP connection' },
				{
					name: 'Require (No Verification)',
					value: 'require',
					description: 'TLS without checking the server certificate',
				},
				{ name: 'Verify Full', value: 'verify-full', description: 'TLS with the server certificate checked' },
			],
			default: 'disable',
		},
		{
			displayName: 'Max Connections',
			name: 'maxConnections',
			type: 'number',
			typeOptions: { minValue: 1 },
			default: 10,
			description:
				'Size of the connection pool shared by all executions that use this credential, per n8n process. Claim Jobs and Finish Job use a second pool of up to this size (connections opened only while they run): budget up to twice this number per process that runs them.',
		},
	];
}
