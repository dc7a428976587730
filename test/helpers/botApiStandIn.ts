/**
 * A stand-in of the Telegram Bot API's file endpoints on 127.0.0.1: `GET /bot<token>/getFile?file_id=`
 * and `GET /file/bot<token>/<file_path>`, serving the files given to it; every request is logged.
 * `POST /bot<token>/sendMessage` (messages kept in `sent`, ids from 1000 on), `getMe` and
 * `getWebhookInfo` (answering `me` and `webhookInfo`, which a test sets).
 * Unknown file ids answer 400 "Bad Request: invalid file_id" as Telegram does; `failNext(status)`
 * makes the next getFile or sendMessage answer that status.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BotApiStandIn {
	baseUrl: string;
	token: string;
	requests: string[];
	files: Map<string, { path: string; body: Buffer; type: string }>;
	sent: { chat_id: number; text: string; reply_parameters?: { message_id: number } }[];
	/** What getMe and getWebhookInfo answer (WF11). */
	me: { id: number; is_bot: true; username: string };
	webhookInfo: Record<string, unknown>;
	failNext(status: number): void;
	close(): Promise<void>;
}

export async function startBotApi(token = '123456:TEST-token'): Promise<BotApiStandIn> {
	const files = new Map<string, { path: string; body: Buffer; type: string }>();
	const requests: string[] = [];
	const sent: BotApiStandIn['sent'] = [];
	let failure: number | null = null;
	const stand = {
		me: { id: 5550001, is_bot: true as const, username: 'kb_helper_bot' },
		webhookInfo: { url: '', pending_update_count: 0 } as Record<string, unknown>,
	} as BotApiStandIn;
	const server = http.createServer(async (req, res) => {
		let raw = '';
		for await (const chunk of req) raw += chunk;
		const url = new URL(req.url ?? '/', 'http://x');
		requests.push(url.pathname.replace(token, '<token>'));
		const json = (status: number, body: unknown) =>
			res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
		const api = ['getFile', 'sendMessage', 'getMe', 'getWebhookInfo'].some((m) => url.pathname === `/bot${token}/${m}`);
		if (api && failure !== null) {
			const status = failure;
			failure = null;
			return json(status, {
				ok: false,
				error_code: status,
				description: status === 429 ? 'Too Many Requests: retry after 1' : 'Bad Gateway',
			});
		}
		if (url.pathname === `/bot${token}/getMe`) return json(200, { ok: true, result: stand.me });
		if (url.pathname === `/bot${token}/getWebhookInfo`) return json(200, { ok: true, result: stand.webhookInfo });
		if (url.pathname === `/bot${token}/sendMessage` && req.method === 'POST') {
			const message = JSON.parse(raw);
			sent.push(message);
			return json(200, {
				ok: true,
				result: {
					message_id: 999 + sent.length,
					chat: { id: message.chat_id },
					date: 1_763_900_000,
					text: message.text,
				},
			});
		}
		if (url.pathname === `/bot${token}/getFile`) {
			const file = files.get(url.searchParams.get('file_id') ?? '');
			if (!file) return json(400, { ok: false, error_code: 400, description: 'Bad Request: invalid file_id' });
			return json(200, {
				ok: true,
				result: {
					file_id: url.searchParams.get('file_id'),
					file_unique_id: 'x',
					file_size: file.body.length,
					file_path: file.path,
				},
			});
		}
		const prefix = `/file/bot${token}/`;
		if (url.pathname.startsWith(prefix)) {
			const file = [...files.values()].find((f) => f.path === url.pathname.slice(prefix.length));
			if (file) return res.writeHead(200, { 'content-type': file.type }).end(file.body);
		}
		return json(404, { ok: false, error_code: 404, description: 'Not Found' });
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	return Object.assign(stand, {
		baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		token,
		requests,
		files,
		sent,
		failNext: (status: number) => {
			failure = status;
		},
		close: async () => {
			server.closeAllConnections();
			await new Promise((r) => server.close(r));
		},
	});
}
