/**
 * CPU time of the processes a bench drives, from Linux's /proc (utime + stime of each process, in ms), so
 * a bench can say where the time of one request goes — n8n (a process tree: main + task runner), the
 * PostgreSQL backends serving the bench's database, the bench's own client — and not only how many
 * requests per second came out. Without /proc (not Linux) every reading is null and the benches print
 * "n/a". Readings of processes that exited between two snapshots are lost (the groups here live through
 * a run: n8n, pooled backends). Clock ticks: `getconf CLK_TCK` (100 on Linux), so ±10 ms per process.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type { Pool } from 'pg';

let tick: number | undefined;
/** ms per clock tick (10 when CLK_TCK is 100). */
function msPerTick(): number {
	if (tick === undefined) {
		try {
			tick = 1000 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
		} catch {
			tick = 10;
		}
	}
	return tick;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number): string[] | null {
	try {
		const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
		return text.slice(text.lastIndexOf(')') + 2).split(' ');
	} catch {
		return null;
	}
}

/** CPU ms (user + system) of one process so far, or 0 when it is gone. */
function processMs(pid: number): number {
	const f = statFields(pid);
	// after the name: state(0) ppid(1) … utime(11) stime(12)
	return f ? (Number(f[11]) + Number(f[12])) * msPerTick() : 0;
}

/** `root` and every process below it (children, grandchildren…), from /proc's parent links. */
export function processTree(root: number): number[] {
	if (!fs.existsSync('/proc/self/stat')) return [];
	const children = new Map<number, number[]>();
	for (const entry of fs.readdirSync('/proc')) {
		const pid = Number(entry);
		if (!Number.isInteger(pid)) continue;
		const f = statFields(pid);
		if (!f) continue;
		const ppid = Number(f[1]);
		children.set(ppid, [...(children.get(ppid) ?? []), pid]);
	}
	const out: number[] = [];
	const walk = (pid: number) => {
		out.push(pid);
		for (const c of children.get(pid) ?? []) walk(c);
	};
	walk(root);
	return out;
}

/** The server pids of every connection to database `name` (pg_stat_activity; needs the same server). */
export async function backendPids(pool: Pool, name: string): Promise<number[]> {
	const { rows } = await pool.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name]);
	return rows.map((r) => r.pid);
}

/** CPU ms per request (or any other unit) of each named group; `null` where /proc is absent. */
export type CpuReading = Record<string, number | null>;

/** CPU ms so far of each living pid of each group (`null` where /proc is absent). */
export type CpuSnapshot = Record<string, Map<number, number> | null>;

/** The CPU ms of each group's living pids now (a pid that is gone is left out). */
export function readCpu(groups: Record<string, number[]>): CpuSnapshot {
	const linux = fs.existsSync('/proc/self/stat');
	return Object.fromEntries(
		Object.entries(groups).map(([name, pids]) => {
			if (!linux) return [name, null];
			const byPid = new Map<number, number>();
			for (const pid of pids) if (statFields(pid)) byPid.set(pid, processMs(pid));
			return [name, byPid];
		}),
	);
}

/**
 * CPU ms per request of each group between two snapshots: the sum over the pids alive in both (a pooled
 * PostgreSQL connection closed in between would otherwise count as negative time).
 */
export function perRequest(before: CpuSnapshot, after: CpuSnapshot, requests: number): CpuReading {
	return Object.fromEntries(
		Object.keys(after).map((k) => {
			const a = after[k];
			const b = before[k];
			if (!a || !b) return [k, null];
			let sum = 0;
			for (const [pid, ms] of a) if (b.has(pid)) sum += Math.max(0, ms - b.get(pid)!);
			return [k, sum / requests];
		}),
	);
}

/** "12.3" or "n/a". */
export function ms(value: number | null | undefined): string {
	return value === null || value === undefined ? 'n/a' : value.toFixed(1);
}

/** Whether the readings here can answer (Linux /proc). */
export const CPU_AVAILABLE = fs.existsSync('/proc/self/stat');

/**
 * CPU seconds (user + system) used so far by each pid in `pids` and its living descendants (n8n's task
 * runners), in the order given; 0 for a pid that is gone or undefined. Children that already exited are
 * not counted, so take differences over a span where none exit.
 */
export function cpuSeconds(pids: Array<number | undefined>): number[] {
	return pids.map((root) =>
		root === undefined ? 0 : processTree(root).reduce((sum, pid) => sum + processMs(pid), 0) / 1000,
	);
}
