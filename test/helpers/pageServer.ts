/**
 * A small web server on 127.0.0.1 serving an HTML article and a PDF (the pages WF31 fetches in the
 * e2e test and the demo), and a Telegram message linking both, as Telegram sends it.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pdfWithText } from './documents';
import { newUpdateId } from './updates';

export const ARTICLE = `<html><head><title>Retrieval notes</title></head><body><h1>Chunking</h1>${Array.from({ length: 120 }, (_, i) => `<p>Paragraph ${i} explains overlap and recall in retrieval.</p>`).join('')}</body></html>`;

export async function startPageServer(): Promise<{ base: string; close(): Promise<void> }> {
	const server = http.createServer((req, res) => {
		if (req.url?.startsWith('/article'))
			res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(ARTICLE);
		else if (req.url === '/paper.pdf')
			res.writeHead(200, { 'content-type': 'application/pdf' }).end(pdfWithText('Dense passage retrieval'));
		else res.writeHead(404).end();
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	return {
		base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		close: async () => {
			server.closeAllConnections();
			await new Promise((r) => server.close(r));
		},
	};
}

/** A group message linking the article (with tracking noise) and the PDF of `base`. */
export function messageWithLinks(base: string, messageId = 5100) {
	const article = `${base}/article?utm_source=tg#top`;
	const text = `read ${article} and ${base}/paper.pdf`;
	return {
		update_id: newUpdateId(),
		message: {
			message_id: messageId,
			from: { id: 111222333, is_bot: false, first_name: 'Alice' },
			chat: { id: -1001234567890, title: 'Research group', type: 'supergroup' },
			date: 1_763_800_000,
			text,
			entities: [
				{ type: 'url', offset: text.indexOf(article), length: article.length },
				{ type: 'url', offset: text.indexOf(`${base}/paper.pdf`), length: `${base}/paper.pdf`.length },
			],
		},
	};
}

/**
 * Writes a copy of workflows-json/WF31_url_fetcher.json whose Fetch URL node may fetch from the page server
 * at `base` (Options → Allowed Private Addresses: its host, Allowed Ports: its port), into a fresh temp
 * folder; returns the file. The shipped WF31 refuses 127.0.0.1 (issue 25's outbound-request guard): the
 * demo and the e2e tests name their page server explicitly this way. The caller removes `path.dirname(file)`.
 */
export function wf31AllowingPages(base: string): string {
	const { hostname, port } = new URL(base);
	return wf31WithOptions({ allowedPrivateAddresses: hostname, allowedPorts: port });
}

/** A copy of WF31 with these Options on its Fetch URL node (as wf31AllowingPages; the caller removes its folder). */
export function wf31WithOptions(options: { allowedPrivateAddresses?: string; allowedPorts?: string }): string {
	const file = path.join(__dirname, '..', '..', 'workflows-json', 'WF31_url_fetcher.json');
	const workflow = JSON.parse(fs.readFileSync(file, 'utf8'));
	for (const node of workflow.nodes) {
		if (node.type !== 'n8n-nodes-contracts.knowledgeBot') continue;
		node.parameters.options = { ...node.parameters.options, ...options };
	}
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-wf31-'));
	const copy = path.join(dir, 'WF31_url_fetcher.json');
	fs.writeFileSync(copy, JSON.stringify(workflow, null, 2));
	return copy;
}
