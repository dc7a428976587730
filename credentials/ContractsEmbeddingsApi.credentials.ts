import type { ICredentialType, INodeProperties } from 'n8n-workflow';
import { docsUrl } from '../nodes/shared/docsUrl';

/**
 * The embeddings endpoint of the knowledge bot (seed 003 WF41/WF51): Gemini-compatible
 * (`POST /v1beta/models/<model>:batchEmbedContents`, key in `x-goog-api-key`) or OpenAI-compatible
 * (`POST /v1/embeddings`, Bearer key). Which model and how many dimensions come from `kg.embedding_models`.
 * Tested by the Knowledge Bot's `contractsEmbeddingsApiTest`: the Base URL is checked (http:// or https://,
 * no spaces, no user info; the message names the field), then the models are listed with the key in a
 * header (never in the query string). The key is redacted from every error (nodes/shared/redact.ts).
 */
export class ContractsEmbeddingsApi implements ICredentialType {
	name = 'contractsEmbeddingsApi';

	displayName = 'Contracts Embeddings API';

	icon = 'file:contractsLlm.svg' as const;

	documentationUrl = docsUrl('credentials.md#contracts-embeddings-api');

	properties: INodeProperties[] = [
		{
			displayName: 'API Style',
			name: 'api',
			type: 'options',
			options: [
				{ name: 'Gemini-Compatible (:batchEmbedContents)', value: 'gemini' },
				{ name: 'OpenAI-Compatible (/v1/embeddings)', value: 'openai' },
			],
			default: 'gemini',
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: 'https://generativelanguage.googleapis.com',
			description: 'Server URL without the API path, starting with http:// or https://',
		},
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: 'Gemini: sent as x-goog-api-key; OpenAI-compatible: as Authorization: Bearer',
		},
	];
}
