/**
 * Pipeline Push in e2e tests and the demo: the Contracts Push API credential in import:credentials form,
 * and a copy of the shipped M17 workflow on another port / PostgreSQL credential.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { WORKFLOWS } from './n8n';

/** The credential M17 references (id pushContracts01), with `secret` (at least 32 characters). */
export function pushCredential(secret: string, { id = 'pushContracts01', name = 'Contracts Push' } = {}): unknown {
	return { id, name, type: 'contractsPushApi', data: { secret } };
}

/** A free TCP port on 127.0.0.1 (closed again before it is returned). */
export function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = net.createServer();
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const { port } = server.address() as net.AddressInfo;
			server.close(() => resolve(port));
		});
	});
}

/**
 * Writes a copy of workflows-json/maas/M17_push.json listening on `port`, optionally with another
 * PostgreSQL credential id (e.g. one through a TCP proxy), into a fresh temp folder; returns the file.
 * The caller removes `path.dirname(file)`.
 */
export function m17Copy(port: number, postgresCredentialId?: string): string {
	const workflow = JSON.parse(fs.readFileSync(path.join(WORKFLOWS, 'maas', 'M17_push.json'), 'utf8'));
	for (const node of workflow.nodes) {
		if (node.type !== 'n8n-nodes-contracts.pipelinePush') continue;
		node.parameters.port = port;
		if (postgresCredentialId)
			node.credentials.postgresContractsApi = {
				id: postgresCredentialId,
				name: `Contracts PostgreSQL ${postgresCredentialId}`,
			};
	}
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-m17-'));
	const file = path.join(dir, 'M17_push.json');
	fs.writeFileSync(file, JSON.stringify(workflow, null, 2));
	return file;
}
