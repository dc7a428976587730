/**
 * Secret scanning for the "no secret in any error, row or log" tests (issue 10 item 5): secrets generated
 * per run, every form they are searched in (as is, URL-encoded, plus derived forms such as a Basic
 * header's Base64), every text an output can be rendered as (message, stack, cause chain, JSON,
 * util.inspect), captured console/stdout/stderr, and a 127.0.0.1 server that echoes path, query, headers
 * and body into its error answers (or never answers).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import util from 'node:util';

/** A secret's name (for messages) and the exact strings that must never appear. */
export interface Secret {
	name: string;
	forms: string[];
}

/** A secret searched as is and URL-encoded (and in any `derived` forms, e.g. Base64 of user:password). */
export function secret(name: string, value: string, derived: string[] = []): Secret {
	return { name, forms: [...new Set([value, encodeURIComponent(value), ...derived])] };
}

/** Fresh secrets of every credential type, with characters that URL-encoding changes. */
export function generateSecrets() {
	const b64 = (n: number) => randomBytes(n).toString('base64');
	const arangoPassword = `pw/${b64(12)}+x`;
	const values = {
		telegramToken: `${randomInt(100_000_000, 999_999_999)}:AA${randomBytes(24).toString('base64url')}`,
		llmKey: `sk-${b64(18)}+/`,
		embeddingsKey: `AIza${b64(18)}+/`,
		arangoPassword,
		arangoJwt: `eyJ${randomBytes(24).toString('base64url')}.${randomBytes(24).toString('base64url')}.${randomBytes(16).toString('base64url')}`,
		postgresPassword: `pg:${b64(12)}/`,
	};
	const all: Secret[] = [
		secret('Telegram bot token', values.telegramToken),
		secret('LLM API key', values.llmKey),
		secret('embeddings API key', values.embeddingsKey),
		secret('ArangoDB password', arangoPassword, [Buffer.from(`root:${arangoPassword}`).toString('base64')]),
		secret('ArangoDB JWT', values.arangoJwt),
		secret('PostgreSQL password', values.postgresPassword),
	];
	return { ...values, all };
}

/** Every text an output may be rendered as: itself, JSON, util.inspect, and each cause's message/stack/JSON. */
export function textsOf(value: unknown): string[] {
	const texts: string[] = [];
	if (typeof value === 'string') texts.push(value);
	try {
		texts.push(JSON.stringify(value) ?? '');
	} catch {
		// cyclic: util.inspect below still renders it
	}
	texts.push(
		util.inspect(value, {
			depth: 30,
			showHidden: true,
			maxStringLength: null,
			maxArrayLength: null,
			breakLength: Infinity,
		}),
	);
	let current: unknown = value;
	for (let depth = 0; depth < 12 && current instanceof Error; depth++) {
		texts.push(current.message, String(current.stack));
		try {
			texts.push(JSON.stringify(current));
		} catch {
			// ignored
		}
		current = (current as { cause?: unknown }).cause;
	}
	return texts;
}

/** Fails naming the output and the secret when any form of any secret appears in any text of `value`. */
export function assertNoSecret(label: string, value: unknown, secrets: Secret[]): void {
	const texts = textsOf(value);
	for (const s of secrets) {
		for (const form of s.forms) {
			const hit = texts.find((t) => t.includes(form));
			if (hit !== undefined) {
				const at = hit.indexOf(form);
				assert.fail(
					`${label} carries the ${s.name}: …${hit.slice(Math.max(0, at - 120), at)}<SECRET>${hit.slice(at + form.length, at + form.length + 60)}…`,
				);
			}
		}
	}
}

/** Runs `work` with console.* and process.stdout/stderr writes captured (and still passed through). */
export async function captureOutput<T>(work: () => Promise<T>): Promise<{ result: T; logged: string }> {
	const chunks: string[] = [];
	const methods = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const;
	const saved = methods.map((m) => console[m]);
	const savedOut = process.stdout.write.bind(process.stdout);
	const savedErr = process.stderr.write.bind(process.stderr);
	for (const m of methods) {
		console[m] = (...args: unknown[]) => {
			chunks.push(util.format(...args));
		};
	}
	process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
		chunks.push(String(chunk));
		return (savedOut as (...a: unknown[]) => boolean)(chunk, ...rest);
	}) as typeof process.stdout.write;
	process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
		chunks.push(String(chunk));
		return (savedErr as (...a: unknown[]) => boolean)(chunk, ...rest);
	}) as typeof process.stderr.write;
	try {
		const result = await work();
		return { result, logged: chunks.join('\n') };
	} finally {
		methods.forEach((m, i) => {
			console[m] = saved[i];
		});
		process.stdout.write = savedOut;
		process.stderr.write = savedErr;
	}
}

/**
 * A 127.0.0.1 HTTP server answering every request with `status` and a body that echoes method, path with
 * query, headers and request body: ArangoDB's error shape under `/_db/` and `/_api/`, else Telegram's
 * (`description`) and OpenAI's (`error.message`). With `hang`, it never answers.
 */
export async function startEchoServer() {
	const sockets = new Set<net.Socket>();
	const state = { status: 401, hang: false };
	const server = http.createServer(async (req, res) => {
		let body = '';
		for await (const chunk of req) body += chunk;
		if (state.hang) return;
		const echo = `echo: ${req.method} ${req.url} ${JSON.stringify(req.headers)} ${body}`;
		const arango = /^\/(_db|_api)\//.test(req.url ?? '');
		const payload = arango
			? { error: true, code: state.status, errorNum: state.status === 401 ? 11 : 1234, errorMessage: echo }
			: { ok: false, error_code: state.status, description: echo, error: { message: echo } };
		res.writeHead(state.status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
	});
	server.on('connection', (socket) => {
		sockets.add(socket);
		socket.on('close', () => sockets.delete(socket));
	});
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const port = (server.address() as AddressInfo).port;
	return Object.assign(state, {
		port,
		url: `http://127.0.0.1:${port}`,
		async close() {
			for (const s of sockets) s.destroy();
			await new Promise((r) => server.close(r));
		},
	});
}

/** A 127.0.0.1 port nothing listens on (connections refused). */
export async function closedPort(): Promise<number> {
	const server = net.createServer();
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const port = (server.address() as AddressInfo).port;
	await new Promise((r) => server.close(r));
	return port;
}
