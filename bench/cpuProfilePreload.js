/**
 * Preloaded into `n8n start` by bench/wf10.profile.ts (NODE_OPTIONS=--require …; Node 20 refuses
 * --cpu-prof there): starts V8's sampling profiler in-process and, on SIGUSR2, stops it and writes the
 * profile to $WF10_CPU_PROFILE (then writes "<file>.done"). Only the process started with `start`.
 */
'use strict';
const fs = require('node:fs');
const inspector = require('node:inspector');

const out = process.env.WF10_CPU_PROFILE;
if (out && process.argv.includes('start')) {
	const session = new inspector.Session();
	session.connect();
	session.post('Profiler.enable', () => {
		session.post('Profiler.setSamplingInterval', { interval: 500 }, () => {
			session.post('Profiler.start');
		});
	});
	process.on('SIGUSR2', () => {
		session.post('Profiler.stop', (error, result) => {
			if (!error) fs.writeFileSync(out, JSON.stringify(result.profile));
			fs.writeFileSync(`${out}.done`, error ? String(error) : 'ok');
		});
	});
}
