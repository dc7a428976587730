/**
 * A stand-in of the Telegram Bot API's file endpoints on 127.0.0.1: `GET /bot<token>/getFile?file_id=`
 * and `GET /file/bot<token>/<file_path>`, serving the files given to it; every request is logged.
 * Unknown file ids answer 400 "Bad Request: invalid file_id" as Telegram does; `failNext(status)`
 * makes the next getFile answer that status.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BotApiStandIn {
	baseUrl: string;
	token: string;
	requests: string[];
	files: Map<string, { path: string; body: Buffer; type: string }>;
	failNext(status: number): void;
	close(): Promise<void>;
}

export async function startBotApi(token = '123456:TEST-token'): Promise<BotApiStandIn> {
	const files = new Map<string, { path: string; body: Buffer; type: string }>();
	const requests: string[] = [];
	let failure: number | null = null;
	const server = http.createServer((req, res) => {
		const url = new URL(req.url ?? '/', 'http://x');
		requests.push(url.pathname.replace(token, '<token>'));
		const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
		if (url.pathname === `/bot${token}/getFile`) {
			if (failure !== null) {
				const status = failure;
				failure = null;
				return json(status, { ok: false, error_code: status, description: status === 429 ? 'Too Many Requests: retry after 1' : 'Bad Gateway' });
			}
			const file = files.get(url.searchParams.get('file_id') ?? '');
			if (!file) return json(400, { ok: false, error_code: 400, description: 'Bad Request: invalid file_id' });
			return json(200, { ok: true, result: { file_id: url.searchParams.get('file_id'), file_unique_id: 'x', file_size: file.body.length, file_path: file.path } });
		}
		const prefix = `/file/bot${token}/`;
		if (url.pathname.startsWith(prefix)) {
			const file = [...files.values()].find((f) => f.path === url.pathname.slice(prefix.length));
			if (file) return res.writeHead(200, { 'content-type': file.type }).end(file.body);
		}
		return json(404, { ok: false, error_code: 404, description: 'Not Found' });
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	return {
		baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		token,
		requests,
		files,
		failNext: (status) => {
			failure = status;
		},
		close: async () => {
			server.closeAllConnections();
			await new Promise((r) => server.close(r));
		},
	};
}
