/**
 * A job worker in a process of its own, as an n8n process claims jobs (issue 26 item 3 tests and
 * bench:recovery): `node --import tsx test/helpers/leaseWorker.ts <database url> <job type> <batch> <worker>`
 * takes its process's job lease (nodes/shared/jobs/lease.ts), claims up to <batch> jobs under it and prints
 * one JSON line `{ "lease_id", "jobs": [{ id, claim_token }] }`. It then sleeps (a step that runs long)
 * until it reads "finish" on stdin: it finishes its jobs as succeeded, prints `{ "finished": n }` and
 * exits. A test kills it with SIGKILL to play a crashed worker.
 */
import { Pool } from 'pg';
import { claimJobs, finishJobs } from '../../nodes/shared/jobs/queue';
import { closeJobLeases, jobLeaseFor } from '../../nodes/shared/jobs/lease';

async function main() {
	const [url, jobType, batch, worker] = process.argv.slice(2);
	const pool = new Pool({ connectionString: url, max: 2 });
	const leaseId = await jobLeaseFor(pool).ready();
	const jobs = await claimJobs(pool, { job_type: jobType, batch_size: batch, worker }, { lease_id: leaseId });
	process.stdout.write(
		`${JSON.stringify({ lease_id: leaseId, jobs: jobs.map((j) => ({ id: Number(j.id), claim_token: j.claim_token })) })}\n`,
	);
	// keeps the process alive (the lease's socket is unref'd) while the "step" runs
	const alive = setInterval(() => undefined, 60_000);
	let input = '';
	process.stdin.on('data', async (chunk) => {
		input += chunk.toString();
		if (!input.includes('finish')) return;
		const done = await finishJobs(
			pool,
			jobs.map((j) => ({ job_id: j.id, worker, success: true, claim_token: j.claim_token })),
		);
		process.stdout.write(`${JSON.stringify({ finished: done.filter((d) => !(d instanceof Error)).length })}\n`);
		clearInterval(alive);
		await closeJobLeases();
		await pool.end();
	});
}

main().catch((error) => {
	process.stderr.write(`${error?.stack ?? error}\n`);
	process.exit(1);
});
