/**
 * CPU time of a process and all its descendants (n8n's task runners included), read from Linux's /proc, for
 * benches that want to say which process a workload's time went to (bench/queue.bench.ts: main vs workers).
 */
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';

/** Whether cpuSeconds() can answer here (Linux /proc). */
export const CPU_AVAILABLE = fs.existsSync('/proc/self/stat');

let ticksPerSecond: number | undefined;

function clockTicks(): number {
	if (ticksPerSecond === undefined) {
		try {
			ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
		} catch {
			ticksPerSecond = 100;
		}
	}
	return ticksPerSecond;
}

/** [pid, ppid, user + system ticks] of every readable process (processes that vanish meanwhile are skipped). */
function processTable(): Array<[number, number, number]> {
	const rows: Array<[number, number, number]> = [];
	for (const entry of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(entry)) continue;
		let stat: string;
		try {
			stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
		} catch {
			continue;
		}
		// the command name (field 2) is in parentheses and may hold spaces: the fields after the last ')'
		const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
		// after the name: state(3) ppid(4) … utime(14) stime(15), i.e. indexes 1, 11, 12 here
		rows.push([Number(entry), Number(fields[1]), Number(fields[11]) + Number(fields[12])]);
	}
	return rows;
}

/**
 * CPU seconds (user + system) used so far by each pid in `pids` and its living descendants, in the order
 * given; 0 for a pid that is gone or undefined. Children that already exited are not counted (their time is
 * in the parent's cutime only once it reaps them), so take differences over a span where none exit.
 * @throws when /proc is not readable (check CPU_AVAILABLE first)
 */
export function cpuSeconds(pids: Array<number | undefined>): number[] {
	const table = processTable();
	const children = new Map<number, number[]>();
	const ticks = new Map<number, number>();
	for (const [pid, ppid, t] of table) {
		ticks.set(pid, t);
		children.set(ppid, [...(children.get(ppid) ?? []), pid]);
	}
	return pids.map((root) => {
		if (root === undefined || !ticks.has(root)) return 0;
		let sum = 0;
		const stack = [root];
		while (stack.length) {
			const pid = stack.pop()!;
			sum += ticks.get(pid) ?? 0;
			stack.push(...(children.get(pid) ?? []));
		}
		return sum / clockTicks();
	});
}
