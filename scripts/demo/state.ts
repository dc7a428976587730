/**
 * The demo's shared state (scripts/demo.ts and the parts under scripts/demo/): the cleanup it runs at its end
 * with --once, on Ctrl-C / SIGTERM / SIGHUP and when it fails, the lines it printed (to check them for secrets
 * at the end) and interrupted(), which stops the demo between its long steps once a signal arrived.
 * Loading this module installs the signal handlers and the console.log that records the printed lines.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { createCleanup } = require('../lib/cleanupOnSignals');

/**
 * What the demo undoes, newest first, at its end with --once, on Ctrl-C / SIGTERM / SIGHUP and when it
 * fails: stop n8n (main and workers in queue mode) and remove its user folder(s), the packed package, the
 * stand-ins, an embedded PostgreSQL. A second Ctrl-C exits at once (n8n killed, folders left, named).
 * n8n's log files and the contracts_demo database are kept.
 */
export const cleanup = createCleanup({ log: (line: string) => console.log(line) });
cleanup.install();

/** Everything the demo prints, to check it for secrets at the end. */
export const printed: string[] = [];
const print = console.log.bind(console);
console.log = (...args: unknown[]) => {
	printed.push(args.map(String).join(' '));
	print(...args);
};

/** Thrown by interrupted() once a signal arrived: the demo starts nothing new while it cleans up. */
export class Interrupted extends Error {}

/** Throws Interrupted when a signal arrived (called between the demo's long steps). */
export function interrupted(): void {
	if (cleanup.stopping) throw new Interrupted('interrupted');
}
