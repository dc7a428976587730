/**
 * Pipeline Push's moving parts wired together: the WebSocket server (./server.ts) and the shared
 * `pipeline_events` listener (nodes/shared/postgres/listener.ts: reconnect with backoff, catch-up of runs
 * changed while disconnected). COMPLETED / FAILED notifications and catch-up rows are checked against the
 * pending subscriptions; after every reconnect, and every `recheckMs`, all pending subscriptions are
 * re-read, so an answer whose notification was lost still arrives (seed 001 §5, "Notifications are not
 * trusted alone").
 */
import type { ClientConfig } from 'pg';
import { PipelineListener } from '../../shared/postgres/listener';
import { PushServer, type PushServerOptions } from './server';

export interface PushServiceOptions extends PushServerOptions {
	/** The listener's dedicated connection (a `pg` ClientConfig, no pool settings). */
	listen: ClientConfig;
	/** NOTIFY channel (default pipeline_events). */
	channel?: string;
	/** Period of the re-check of every pending subscription (ms). */
	recheckMs: number;
	/** Redacts connection errors before they are logged. */
	redact?(text: string): string;
	/** Listener's reconnect backoff cap (ms; default 30 s). */
	maxBackoffMs?: number;
}

/** stop() resolves within this time (ms), whatever PostgreSQL and the peers do. */
export const SERVICE_STOP_TIMEOUT_MS = 5_000;

export interface PushService {
	server: PushServer;
	listener: PipelineListener;
	stop(): Promise<void>;
}

/**
 * Connects the listener, then opens the port.
 * @throws the first connection's error (nothing keeps running), or the port's ("… is in use …")
 */
export async function startPushService(options: PushServiceOptions): Promise<PushService> {
	const redact = options.redact ?? ((text: string) => text);
	const { logger } = options;
	const server = new PushServer(options);
	const recheck = (why: string) =>
		server
			.recheckAll()
			.catch((error: Error) => logger.warn(`Pipeline Push: re-check (${why}) failed: ${redact(error.message)}`));
	const listener = new PipelineListener(options.listen, {
		channel: options.channel || 'pipeline_events',
		statuses: ['COMPLETED', 'FAILED'],
		// nothing "waits" here: the catch-up covers only the runs that finished while disconnected
		waitingStatuses: [],
		maxBackoffMs: options.maxBackoffMs ?? 30_000,
		onEvents: (events) =>
			void server
				.check(events.map((e) => e.id))
				.catch((error: Error) => logger.warn(`Pipeline Push: ${redact(error.message)} (re-checked later)`)),
		onConnect: (reconnected) => {
			if (reconnected) void recheck('reconnected');
		},
		onError: (error) => logger.warn(`Pipeline Push: ${redact(error.message)} (reconnecting)`),
	});
	await listener.start();
	try {
		await server.start();
	} catch (error) {
		await listener.stop();
		throw error;
	}
	const timer = setInterval(() => void recheck('periodic'), options.recheckMs);
	timer.unref?.();
	return {
		server,
		listener,
		async stop() {
			clearInterval(timer);
			// n8n awaits the close function without a timeout: bounded here (the server bounds itself; the
			// listener's client.end() could wait on a PostgreSQL connection that no longer answers)
			let bound: NodeJS.Timeout | undefined;
			await Promise.race([
				Promise.all([server.stop(), listener.stop()]),
				new Promise((resolve) => (bound = setTimeout(resolve, SERVICE_STOP_TIMEOUT_MS))),
			]);
			clearTimeout(bound);
		},
	};
}
