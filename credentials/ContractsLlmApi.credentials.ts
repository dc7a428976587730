import type { IAuthenticateGeneric, ICredentialTestRequest, ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * The model endpoint of the MaaS pipeline (seed 001): an OpenAI-compatible (`POST /v1/chat/completions`)
 * or Ollama-compatible (`POST /api/generate`) server, its key and default model. Used by Pipeline
 * Capture's Model → Generate. The credential test lists the models (`GET /v1/models` or `/api/tags`).
 */
export class ContractsLlmApi implements ICredentialType {
	name = 'contractsLlmApi';

	displayName = 'Contracts LLM API';

	icon = 'file:contractsLlm.svg' as const;

	documentationUrl = 'https://github.com/n8n-nodes-contracts/n8n-nodes-contracts#llm-credential';

	properties: INodeProperties[] = [
		{
			displayName: 'API Style',
			name: 'api',
			type: 'options',
			options: [
				{ name: 'OpenAI-Compatible (/v1/chat/completions)', value: 'openai' },
				{ name: 'Ollama-Compatible (/api/generate)', value: 'ollama' },
			],
			default: 'openai',
		},
		{ displayName: 'Base URL', name: 'baseUrl', type: 'string', default: 'http://127.0.0.1:11434', placeholder: 'https://api.openai.com', description: 'Server URL without the API path' },
		{ displayName: 'API Key', name: 'apiKey', type: 'string', typeOptions: { password: true }, default: '', description: 'Sent as Authorization: Bearer (leave empty for a local server)' },
		{ displayName: 'Default Model', name: 'model', type: 'string', default: 'llama3', description: 'Model used when a step does not name one' },
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: { headers: { Authorization: '={{ $credentials.apiKey ? "Bearer " + $credentials.apiKey : "" }}' } },
	};

	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{ $credentials.baseUrl.replace(/\\/+$/, "") }}',
			url: '={{ $credentials.api === "openai" ? "/v1/models" : "/api/tags" }}',
		},
	};
}
