import type { ICredentialTestRequest, ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * A Telegram bot's Bot API access, for the Knowledge Bot's File → Download (seed 003 WF32: getFile and
 * the file download). Same fields as n8n's own Telegram API credential; the test calls `getMe`.
 * Base URL: https://api.telegram.org, or a local Bot API server (which lifts the 20 MB download limit).
 */
export class ContractsTelegramApi implements ICredentialType {
	name = 'contractsTelegramApi';

	displayName = 'Contracts Telegram Bot API';

	icon = 'file:contractsTelegram.svg' as const;

	documentationUrl = 'https://github.com/n8n-nodes-contracts/n8n-nodes-contracts#knowledge-bot-seed-003';

	properties: INodeProperties[] = [
		{ displayName: 'Access Token', name: 'accessToken', type: 'string', typeOptions: { password: true }, default: '', required: true, description: 'The bot token from @BotFather (123456:ABC-…)' },
		{ displayName: 'Base URL', name: 'baseUrl', type: 'string', default: 'https://api.telegram.org', description: 'Bot API server URL' },
	];

	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{ $credentials.baseUrl.replace(/\\/+$/, "") + "/bot" + $credentials.accessToken }}',
			url: '/getMe',
		},
	};
}
