/**
 * The README (issue 27 §2): under 8 KB, everything else in docs/. It keeps what a newcomer needs first —
 * that the package is for self-hosted n8n, an unverified community package not eligible for n8n Cloud; the
 * supported matrix; the install routes that work today (a tarball from `npm pack`) and once published
 * (Community Nodes, `npm install`), and that queue-mode workers need the package too; the test command
 * `npm test`; where the latest benchmark table is. Every relative link of the README and of the docs/ pages
 * resolves to a file of the repository.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from '@jest/globals';

const ROOT = path.resolve(__dirname, '..', '..');
const README = path.join(ROOT, 'README.md');
const readme = readFileSync(README, 'utf8');

test('README.md is under 8 KB (8192 bytes)', () => {
	const bytes = statSync(README).size;
	assert.ok(bytes < 8192, `README.md is ${bytes} bytes`);
});

test('README.md says where the package runs, how to install it, how to test it, where the benchmarks are', () => {
	for (const phrase of [
		'Self-hosted n8n only',
		'unverified community package',
		'not eligible for n8n Cloud',
		'n8n 2.4.8',
		'the newest n8n',
		'npm pack',
		'Community Nodes',
		'npm install n8n-nodes-contracts',
		'Queue mode',
		'every worker',
		'**`npm test` is the test command**',
		'docs/benchmarks.md',
	])
		assert.ok(readme.includes(phrase), `README.md says "${phrase}"`);
	assert.match(readme, /^```bash\nnpm test\n```$/m, 'the test command in a code block of its own');
});

/** Every Markdown file of the README and docs/ (repository-relative). */
function markdownFiles(): string[] {
	const out = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md'];
	const walk = (dir: string) => {
		for (const name of readdirSync(path.join(ROOT, dir))) {
			const rel = path.join(dir, name);
			if (statSync(path.join(ROOT, rel)).isDirectory()) walk(rel);
			else if (name.endsWith('.md')) out.push(rel);
		}
	};
	walk('docs');
	return out;
}

test('every relative link of README.md, CONTRIBUTING.md, CHANGELOG.md and docs/ resolves to a file', () => {
	const broken: string[] = [];
	for (const file of markdownFiles()) {
		const text = readFileSync(path.join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
		for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
			if (/^([a-z]+:|#)/i.test(target)) continue; // a URL or an anchor of the same page
			const resolved = path.resolve(ROOT, path.dirname(file), decodeURIComponent(target.split('#')[0]));
			if (!existsSync(resolved)) broken.push(`${file}: ${target}`);
		}
	}
	assert.deepEqual(broken, []);
});
