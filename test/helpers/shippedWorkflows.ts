/** The workflows this package ships: every `.json` under workflows-json/ (arango/ and maas/ included). */
import fs from 'node:fs';
import path from 'node:path';

/** workflows-json/ of this checkout. */
export const WORKFLOWS_DIR = path.join(__dirname, '..', '..', 'workflows-json');

/** Every shipped workflow file, as paths relative to workflows-json/, sorted (e.g. "maas/M11_analyzer.json"). */
export function shippedWorkflowFiles(): string[] {
	return (fs.readdirSync(WORKFLOWS_DIR, { recursive: true }) as string[])
		.filter((f) => f.endsWith('.json'))
		.map((f) => f.split(path.sep).join('/'))
		.sort();
}

/** Every shipped workflow, parsed, with the file it came from (relative to workflows-json/). */
export function shippedWorkflows<T>(): Array<{ file: string; workflow: T }> {
	return shippedWorkflowFiles().map((file) => ({
		file,
		workflow: JSON.parse(fs.readFileSync(path.join(WORKFLOWS_DIR, file), 'utf8')) as T,
	}));
}
