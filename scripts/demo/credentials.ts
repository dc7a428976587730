/**
 * The n8n credentials the demo imports: the demo database, the Bot API stand-in, this run's JWT Auth, push and
 * scrape secrets, and the embeddings and LLM stand-ins under the ids the shipped workflows reference.
 */
import { pushCredential } from '../../test/helpers/push';
import { EMBEDDINGS_KEY, JWT_SECRET, LLM_KEY, PUSH_SECRET, SCRAPE_TOKEN } from './settings';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../lib/n8n');

/**
 * The credentials for `instance.importCredentials`: `databaseUrl` (the demo database), the Bot API stand-in's
 * base URL and token, the embeddings stand-in's base URL and the model stand-in's URL.
 */
export function demoCredentials(o: {
	databaseUrl: string;
	botApi: { baseUrl: string; token: string };
	embeddingsUrl: string;
	modelUrl: string;
}) {
	return [
		harness.postgresCredential(o.databaseUrl),
		harness.telegramCredential(o.botApi.baseUrl, o.botApi.token),
		harness.jwtCredential(JWT_SECRET),
		pushCredential(PUSH_SECRET),
		{
			id: 'metricsHeaderAuth01',
			name: 'Contracts Metrics Scrape',
			type: 'httpHeaderAuth',
			data: { name: 'Authorization', value: `Bearer ${SCRAPE_TOKEN}` },
		},
		// the shipped WF41/WF51 reference these ids; point baseUrl/apiKey (and model) at a real endpoint instead (README)
		{
			id: 'embContracts01',
			name: 'Contracts Embeddings',
			type: 'contractsEmbeddingsApi',
			data: { api: 'gemini', baseUrl: o.embeddingsUrl, apiKey: EMBEDDINGS_KEY },
		},
		{
			id: 'llmContracts01',
			name: 'Contracts LLM',
			type: 'contractsLlmApi',
			data: { api: 'openai', baseUrl: o.modelUrl, apiKey: LLM_KEY, model: 'demo-extractive' },
		},
	];
}
