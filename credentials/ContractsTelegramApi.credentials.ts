import type { ICredentialType, INodeProperties } from 'n8n-workflow';
import { docsUrl } from '../nodes/shared/docsUrl';

/**
 * A Telegram bot's Bot API access, for the Knowledge Bot's File → Download (seed 003 WF32: getFile and
 * the file download). Same fields as n8n's own Telegram API credential. Tested by the Knowledge Bot's
 * `contractsTelegramApiTest`: the Base URL is checked (http:// or https://, no spaces, no user info; the
 * message names the field and never quotes the token), then `getMe` is called.
 * Base URL: https://api.telegram.org, or a local Bot API server (which lifts the 20 MB download limit).
 * The token is redacted from every error, row and log line (nodes/shared/redact.ts).
 */
export class ContractsTelegramApi implements ICredentialType {
	name = 'contractsTelegramApi';

	displayName = 'Contracts Telegram Bot API';

	icon = 'file:contractsTelegram.svg' as const;

	documentationUrl = docsUrl('credentials.md#contracts-telegram-bot-api');

	properties: INodeProperties[] = [
		{
			displayName: 'Access Token',
			name: 'accessToken',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			description: 'The bot token from @BotFather (123456:ABC-…)',
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: 'https://api.telegram.org',
			description: 'Bot API server URL, starting with http:// or https://',
		},
	];
}
