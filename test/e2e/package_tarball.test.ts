/**
 * The packed package as a user installs it (issue 27).
 * - `npm pack --dry-run --json` lists exactly the intended files (§2): package.json, README.md, LICENSE,
 *   CHANGELOG.md; dist/ as the build wrote it (compiled nodes and credentials with their .d.ts and source
 *   maps, icons, codex .node.json); db/ (the PostgreSQL migrations, db/arango/schema.json, the state-machine
 *   definitions) and workflows-json/ as committed; nothing else (no TypeScript source, tests, docs, scripts).
 * - The tarball installed into a fresh n8n user folder (.n8n/nodes, as Settings → Community Nodes and
 *   `npm install` there do) loads in n8n 2.4.8 with every node and credential the package declares: n8n's
 *   `n8n start` writes what it loaded to <user folder>/.cache/n8n/public/types/{nodes,credentials}.json
 *   (what the editor fetches from /types/nodes.json), read here from disk.
 * - The harness leaves no contracts-pack-* folder behind (§3): createInstance() without a tarball packs one
 *   for itself and removes it once installed into the user folder's .n8n/nodes, also when the install fails.
 *   Its default instance copies the tree installed once per tarball content: the same files as an npm install.
 *   Checked in a private TMPDIR, so other processes' temp folders do not count.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, test } from '@jest/globals';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const harness = require('../../scripts/lib/n8n');

const ROOT = path.join(__dirname, '..', '..');
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
	name: string;
	version: string;
	n8n: { nodes: string[]; credentials: string[] };
};

let tmp: string;
let savedTmpdir: string | undefined;
/** The instance of the first test (package installed from its tarball), started by the load test. */
let installed: {
	folder: string;
	start(): Promise<string>;
	stop(): Promise<void>;
	remove(): void;
	transcript(): string;
};

beforeAll(() => {
	tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-tarball-test-'));
	savedTmpdir = process.env.TMPDIR;
	// os.tmpdir() reads TMPDIR on every call: the harness's temp folders of this file go here
	process.env.TMPDIR = tmp;
});

afterAll(async () => {
	if (installed) {
		await installed.stop();
		installed.remove();
	}
	if (savedTmpdir === undefined) delete process.env.TMPDIR;
	else process.env.TMPDIR = savedTmpdir;
	fs.rmSync(tmp, { recursive: true, force: true });
});

test('createInstance packs, installs into .n8n/nodes and removes its tarball: only the user folder is left', () => {
	assert.equal(os.tmpdir(), tmp);
	installed = harness.createInstance({ bin: harness.ensureN8n({ log: console.log }), freshInstall: true });
	assert.deepEqual(fs.readdirSync(tmp), [path.basename(installed.folder)]);
	const manifest = path.join(installed.folder, '.n8n', 'nodes', 'node_modules', PKG.name, 'package.json');
	assert.equal(JSON.parse(fs.readFileSync(manifest, 'utf8')).version, PKG.version);
}, 180_000);

/** Every entry under `dir`: relative path, then the file's size or the link's target (folders left out). */
function tree(dir: string): string[] {
	return fs
		.readdirSync(dir, { withFileTypes: true, recursive: true })
		.filter((e) => !e.isDirectory())
		.map((e) => {
			const full = path.join(e.parentPath, e.name);
			const what = e.isSymbolicLink() ? `-> ${fs.readlinkSync(full)}` : String(fs.statSync(full).size);
			return `${path.relative(dir, full)} ${what}`;
		})
		.sort();
}

test('the default instance (a copy of the tree installed once per tarball content) holds the same files as an npm install', () => {
	assert.ok(installed, 'the first test installed the package');
	const copied = harness.createInstance({ bin: harness.ensureN8n() });
	try {
		// node_modules as installed (npm's own records there and beside it name the tarball's temp path)
		const nodes = (folder: string) =>
			tree(path.join(folder, '.n8n', 'nodes', 'node_modules')).filter((f) => !f.startsWith('.package-lock.json '));
		const fresh = nodes(installed.folder);
		assert.ok(fresh.some((f) => f.startsWith(`${PKG.name}/package.json `)));
		assert.deepEqual(nodes(copied.folder), fresh);
		// the package's files are shared with the cached tree (hard links: no copy per instance), npm's own
		// records are not (npm rewrites them in place when something is installed there)
		const nodesDir = path.join(copied.folder, '.n8n', 'nodes');
		assert.ok(fs.statSync(path.join(nodesDir, 'node_modules', PKG.name, 'package.json')).nlink > 1, 'linked');
		for (const record of harness.NPM_RECORDS as string[])
			assert.equal(fs.statSync(path.join(nodesDir, record)).nlink, 1, `${record} is a copy of its own`);
		assert.deepEqual(
			fs.readdirSync(tmp).filter((f) => f.startsWith('contracts-pack-')),
			[],
		);
	} finally {
		copied.remove();
	}
}, 180_000);

test('a failed install removes the tarball too', () => {
	const notAFolder = path.join(tmp, 'a-file');
	fs.writeFileSync(notAFolder, '');
	const before = fs.readdirSync(tmp);
	assert.throws(() =>
		harness.createInstance({ bin: '/nonexistent/n8n', userFolder: path.join(notAFolder, 'x'), freshInstall: true }),
	);
	assert.deepEqual(fs.readdirSync(tmp), before);
	fs.rmSync(notAFolder);
}, 180_000);

test('removePackage removes a packPackage folder and nothing else', () => {
	const tarball = harness.packPackage();
	assert.match(path.basename(path.dirname(tarball)), /^contracts-pack-/);
	assert.ok(fs.existsSync(tarball));
	const other = fs.mkdtempSync(path.join(tmp, 'other-'));
	fs.writeFileSync(path.join(other, 'x.tgz'), '');
	harness.removePackage(path.join(other, 'x.tgz'));
	assert.ok(fs.existsSync(other), 'a folder not made by packPackage stays');
	harness.removePackage(tarball);
	harness.removePackage(tarball);
	assert.deepEqual(
		fs.readdirSync(tmp).filter((f) => f.startsWith('contracts-pack-')),
		[],
	);
	fs.rmSync(other, { recursive: true });
}, 180_000);

/** Every file under `dir` (relative to the repository root, `/`-separated). */
function walk(dir: string): string[] {
	return fs
		.readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
		.filter((e) => e.isFile())
		.map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
}

test('npm pack --dry-run lists exactly package.json, README.md, LICENSE, CHANGELOG.md, dist/, db/ and workflows-json/', () => {
	const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--silent'], { cwd: ROOT, encoding: 'utf8' });
	const [packed] = JSON.parse(out) as { name: string; version: string; files: { path: string }[] }[];
	assert.equal(packed.name, PKG.name);
	assert.equal(packed.version, PKG.version);
	const files = packed.files.map((f) => f.path).sort();
	const committed = execFileSync('git', ['ls-files', 'db', 'workflows-json'], { cwd: ROOT, encoding: 'utf8' })
		.trim()
		.split('\n');
	const expected = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', ...walk('dist'), ...committed].sort();
	assert.deepEqual(files, expected);
	// what dist/ must hold for n8n, and nothing that is not built output
	for (const file of [...PKG.n8n.nodes, ...PKG.n8n.credentials]) assert.ok(files.includes(file), `${file} is packed`);
	const icons = [...walk('nodes'), ...walk('credentials')].filter((f) => /\.(svg|png)$|\.node\.json$/.test(f));
	for (const icon of icons) assert.ok(files.includes(`dist/${icon}`), `dist/${icon} is packed`);
	// tsc copies the JSON modules it compiles (resolveJsonModule), e.g. nodes/shared/jobs/registry.json
	const stray = files.filter(
		(f) =>
			f.startsWith('dist/') &&
			!/(\.js|\.d\.ts|\.js\.map|\.svg|\.png|\.node\.json)$/.test(f) &&
			!(f.endsWith('.json') && fs.existsSync(path.join(ROOT, f.slice('dist/'.length)))),
	);
	assert.deepEqual(stray, []);
	assert.ok(files.some((f) => f.startsWith('db/migrations/') && f.endsWith('.sql')));
}, 120_000);

test('the tarball installed into a fresh n8n user folder loads every node and credential in n8n 2.4.8', async () => {
	assert.ok(installed, 'the first test installed the package');
	const instance = installed;
	{
		// what the package declares, from its own built classes
		const expectedNodes = PKG.n8n.nodes.map((file) => {
			const exported = require(path.join(ROOT, file)) as Record<string, new () => { description: { name: string } }>;
			const [NodeClass] = Object.values(exported);
			return `${PKG.name}.${new NodeClass().description.name}`;
		});
		const expectedCredentials = PKG.n8n.credentials.map((file) => {
			const exported = require(path.join(ROOT, file)) as Record<string, new () => { name: string }>;
			const [CredentialClass] = Object.values(exported);
			return new CredentialClass().name;
		});
		assert.equal(expectedNodes.length, 8);
		assert.equal(expectedCredentials.length, 6);
		await instance.start();
		const types = path.join(instance.folder, '.cache', 'n8n', 'public', 'types');
		const nodes = JSON.parse(fs.readFileSync(path.join(types, 'nodes.json'), 'utf8')) as { name: string }[];
		const credentials = JSON.parse(fs.readFileSync(path.join(types, 'credentials.json'), 'utf8')) as {
			name: string;
		}[];
		assert.ok(
			nodes.some((n) => n.name === 'n8n-nodes-base.webhook'),
			"n8n's own nodes are in the file",
		);
		const ours = [...new Set(nodes.map((n) => n.name).filter((n) => n.startsWith(`${PKG.name}.`)))].sort();
		assert.deepEqual(ours, [...expectedNodes].sort());
		const credentialNames = new Set(credentials.map((c) => c.name));
		for (const name of expectedCredentials) assert.ok(credentialNames.has(name), `credential ${name} is loaded`);
		assert.doesNotMatch(instance.transcript(), new RegExp(`(error|failed).{0,80}${PKG.name}`, 'i'));
	}
}, 300_000);
