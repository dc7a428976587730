'use strict';
/**
 * Cleanup on Ctrl-C, SIGTERM and SIGHUP for a long-running script (`npm run demo`): the script registers
 * each thing it must undo as it creates it (stop n8n and remove its user folder, stop an embedded
 * PostgreSQL, close local servers, remove temp files); the first signal runs every step, newest first,
 * then exits; a second signal while they run exits at once (after the synchronous `force` steps, e.g.
 * SIGKILL of n8n) and prints what was left behind. The normal end of the script runs the same steps
 * through run(), so a signal cleans up exactly as a finished run does.
 *
 *   const cleanup = createCleanup({ log: console.error });
 *   cleanup.install();
 *   cleanup.add('stop n8n, remove /tmp/x', () => instance.dispose(), { force: () => instance.killNow() });
 *   …
 *   await cleanup.run(); // at the end
 */

/** The exit code of a process ended by a signal, as a shell reports it: 128 + the signal's number. */
const SIGNAL_EXIT = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

/**
 * @param {object} [o]
 * @param {(line: string) => void} [o.log]  where the cleanup's own lines go (default console.error)
 * @param {(code: number) => void} [o.exit] how to exit (default process.exit; tests pass their own)
 * @param {NodeJS.EventEmitter} [o.target] what emits the signals (default process; tests pass an EventEmitter)
 * @param {string[]} [o.signals] default SIGINT, SIGTERM, SIGHUP
 * @returns {{
 *   add(label: string, step: () => unknown, opts?: { force?: () => void }): () => void,
 *   run(): Promise<string[]>,
 *   install(): void,
 *   uninstall(): void,
 *   readonly stopping: boolean,
 *   readonly signal: string | null,
 *   exitCode: number | null,
 * }}
 *   add():       registers a step (sync or async); returns a function that unregisters it (when the script
 *                undid it itself). `force` runs synchronously on a second signal instead of waiting.
 *   run():       runs every registered step once, newest first; a step that throws is logged (its message)
 *                and the others still run; resolves with the labels of the steps that failed. Idempotent:
 *                a second call returns the same promise.
 *   stopping:    true once a signal arrived or run() was called (the script should start nothing new).
 *   exitCode:    the code a signal exits with after the cleanup: null (default) = 128 + the signal number
 *                (130 for SIGINT); set it to 0 once the script's work is done and a signal is the normal end.
 */
function createCleanup({
	log = (line) => console.error(line),
	exit = (code) => process.exit(code),
	target = process,
	signals = ['SIGINT', 'SIGTERM', 'SIGHUP'],
} = {}) {
	/** @type {{ label: string, step: () => unknown, force?: () => void, started: boolean, done: boolean }[]} */
	const steps = [];
	const next = () => [...steps].reverse().find((e) => !e.started);
	let running = null;
	let signal = null;
	let stopping = false;

	const api = {
		exitCode: null,
		get stopping() {
			return stopping;
		},
		get signal() {
			return signal;
		},
		add(label, step, { force } = {}) {
			const entry = { label, step, force, started: false, done: false };
			steps.push(entry);
			return () => {
				const at = steps.indexOf(entry);
				if (at >= 0) steps.splice(at, 1);
			};
		},
		run() {
			stopping = true;
			if (!running) {
				running = (async () => {
					const failed = [];
					// newest first; a step registered while the cleanup runs (a step of the script that was under way) runs too
					for (let entry = next(); entry; entry = next()) {
						entry.started = true;
						try {
							await entry.step();
						} catch (error) {
							failed.push(entry.label);
							log(
								`cleanup: ${entry.label} failed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
							);
						}
						entry.done = true;
					}
					return failed;
				})();
			}
			return running;
		},
		install() {
			for (const s of signals) target.on(s, onSignal);
		},
		uninstall() {
			for (const s of signals) target.removeListener(s, onSignal);
		},
	};

	function onSignal(name) {
		const code = api.exitCode ?? SIGNAL_EXIT[name] ?? 1;
		if (signal !== null) {
			// the second signal: no more waiting
			for (const entry of steps) {
				if (entry.done || !entry.force) continue;
				try {
					entry.force();
				} catch {
					// exiting anyway
				}
			}
			const left = steps.filter((e) => !e.done).map((e) => e.label);
			log(`\n${name} again: exiting now${left.length ? `; not done: ${left.join('; ')}` : ''}`);
			exit(code);
			return;
		}
		signal = name;
		log(
			`\n${name}: cleaning up (${
				steps.length
					? [...steps]
							.reverse()
							.map((e) => e.label)
							.join('; ')
					: 'nothing to do'
			}) — press Ctrl-C again to exit at once`,
		);
		api.run().then(
			(failed) => {
				log(failed.length ? `cleanup done except: ${failed.join('; ')}` : 'cleanup done');
				exit(code);
			},
			() => exit(code),
		);
	}

	return api;
}

module.exports = { createCleanup, SIGNAL_EXIT };
