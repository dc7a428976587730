import type { IAuthenticateGeneric, ICredentialType, INodeProperties } from 'n8n-workflow';
import { docsUrl } from '../nodes/shared/docsUrl';

/**
 * The model endpoint of the MaaS pipeline (seed 001) and of WF51: an OpenAI-compatible (`POST /v1/chat/completions`),
 * Gemini (`POST /v1beta/openai/chat/completions` at https://generativelanguage.googleapis.com, the key as
 * Bearer) or Ollama-compatible (`POST /api/generate`) server, its key and default model. Used by Pipeline
 * Capture's Model → Generate. Tested by the nodes' `contractsLlmApiTest`: the Base URL is checked
 * (http:// or https://, no spaces, no user info; the message names the field), then the models are listed
 * (`GET /v1/models`, `/v1beta/openai/models` or `/api/tags`). The key is redacted from every error (nodes/shared/redact.ts).
 */
export class ContractsLlmApi implements ICredentialType {
	name = 'contractsLlmApi';

	displayName = 'Contracts LLM API';

	icon = 'file:contractsLlm.svg' as const;

	documentationUrl = docsUrl('credentials.md#contracts-llm-api');

	properties: INodeProperties[] = [
		{
			displayName: 'API Style',
			name: 'api',
			type: 'options',
			options: [
				{ name: 'OpenAI-Compatible (/v1/chat/completions)', value: 'openai' },
				{ name: 'Gemini (OpenAI-Compatible, /v1beta/openai/chat/completions)', value: 'gemini' },
				{ name: 'Ollama-Compatible (/api/generate)', value: 'ollama' },
			],
			default: 'openai',
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: 'http://127.0.0.1:11434',
			placeholder: 'https://api.openai.com',
			description: 'Server URL without the API path, starting with http:// or https://',
		},
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: 'Sent as Authorization: Bearer (leave empty for a local server)',
		},
		{
			displayName: 'Default Model',
			name: 'model',
			type: 'string',
			default: 'llama3',
			description: 'Model used when a step does not name one',
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: { headers: { Authorization: '={{ $credentials.apiKey ? "Bearer " + $credentials.apiKey : "" }}' } },
	};
}
