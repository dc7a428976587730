/**
 * The Webhook nodes of shipped workflow files, read from their JSON: method, path, authentication, the
 * credential it names, and the URL path n8n serves it under (a path with `:param` segments is served
 * under the node's webhookId, with `sample` standing in for each parameter).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface ShippedWebhook {
	file: string;
	node: string;
	method: string;
	path: string;
	/** The part after `/webhook/` to call it with. */
	urlPath: string;
	authentication: string | undefined;
	jwtCredentialId: string | undefined;
}

interface WebhookNodeJson {
	name: string;
	type: string;
	webhookId?: string;
	parameters: { httpMethod?: string; path: string; authentication?: string };
	credentials?: { jwtAuth?: { id?: string } };
}

export function shippedWebhooks(files: string[]): ShippedWebhook[] {
	return files.flatMap((file) => {
		const workflow = JSON.parse(readFileSync(file, 'utf8')) as { nodes: WebhookNodeJson[] };
		return workflow.nodes
			.filter((n) => n.type === 'n8n-nodes-base.webhook')
			.map((n) => {
				const dynamic = n.parameters.path.includes(':');
				return {
					file: path.basename(file),
					node: n.name,
					method: n.parameters.httpMethod ?? 'GET',
					path: n.parameters.path,
					urlPath: dynamic ? `${n.webhookId}/${n.parameters.path.replace(/:[^/]+/g, 'sample')}` : n.parameters.path,
					authentication: n.parameters.authentication,
					jwtCredentialId: n.credentials?.jwtAuth?.id,
				};
			});
	});
}
