/**
 * The package can be published (issue 27 §2): package.json names its repository, homepage, issue tracker and
 * an author with an email, has no `main` (n8n's loader reads the `n8n` section only; there is no entry
 * module to require), ships LICENSE (MIT) and CHANGELOG.md; and .github/workflows/publish.yml — the GitHub
 * Actions workflow n8n's community-node guidelines require since May 2026 — parses and publishes with
 * `npm publish --provenance`, with OIDC (`id-token: write`) granted to the publish job only, on Node 24
 * (npm ≥ 11.5.1, which trusted publishing needs), after the full test suite, only for a tag v<version>.
 * The workflow cannot run here; what it says is checked. The packed file list and an install of the
 * tarball into n8n are checked by test/e2e/package_tarball.test.ts.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from '@jest/globals';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const yaml = require('js-yaml') as { load(text: string): unknown };

const ROOT = path.resolve(__dirname, '..', '..');
const REPOSITORY = 'https://github.com/n8n-nodes-contracts/n8n-nodes-contracts';

interface PackageJson {
	name: string;
	version: string;
	license: string;
	main?: string;
	keywords: string[];
	homepage: string;
	bugs: { url: string };
	repository: { type: string; url: string };
	author: { name: string; email: string };
	files: string[];
	n8n: { n8nNodesApiVersion: number; nodes: string[]; credentials: string[] };
}

const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as PackageJson;

interface Step {
	name?: string;
	uses?: string;
	run?: string;
	with?: Record<string, unknown>;
}
interface Job {
	needs?: string | string[];
	permissions?: Record<string, string>;
	'runs-on': string;
	services?: Record<string, { image: string }>;
	steps: Step[];
}
interface Workflow {
	name: string;
	on: { push?: { tags?: string[] }; workflow_dispatch?: unknown };
	permissions?: Record<string, string>;
	jobs: Record<string, Job>;
}

test('package.json: repository, homepage, bugs and author email point at one GitHub repository', () => {
	assert.equal(pkg.repository.type, 'git');
	assert.equal(pkg.repository.url, `git+${REPOSITORY}.git`);
	assert.equal(pkg.homepage, `${REPOSITORY}#readme`);
	assert.equal(pkg.bugs.url, `${REPOSITORY}/issues`);
	assert.ok(pkg.author.name.trim().length > 0);
	assert.match(pkg.author.email, /^[^\s@]+@[^\s@]+\.[a-z]{2,}$/i);
	assert.ok(pkg.keywords.includes('n8n-community-node-package'), 'the keyword n8n uses to find community packages');
	assert.match(pkg.name, /^(@[a-z0-9-]+\/)?n8n-nodes-/, 'the name pattern n8n installs and loads');
});

test('package.json has no `main` (nothing to require) or one that is packed', () => {
	if (pkg.main === undefined) return;
	assert.ok(existsSync(path.join(ROOT, pkg.main)), `main ${pkg.main} does not exist`);
});

test('the n8n section lists every node and credential of the repository, as built into dist/', () => {
	const nodes = readdirSync(path.join(ROOT, 'nodes'), { withFileTypes: true })
		.filter((d) => d.isDirectory() && existsSync(path.join(ROOT, 'nodes', d.name, `${d.name}.node.ts`)))
		.map((d) => `dist/nodes/${d.name}/${d.name}.node.js`);
	const credentials = readdirSync(path.join(ROOT, 'credentials'))
		.filter((f) => f.endsWith('.credentials.ts'))
		.map((f) => `dist/credentials/${f.replace(/\.ts$/, '.js')}`);
	assert.deepEqual([...pkg.n8n.nodes].sort(), nodes.sort());
	assert.deepEqual([...pkg.n8n.credentials].sort(), credentials.sort());
	assert.equal(pkg.n8n.n8nNodesApiVersion, 1);
});

test('LICENSE is the MIT license package.json names; CHANGELOG.md has a section for this version; both are packed', () => {
	assert.equal(pkg.license, 'MIT');
	const license = readFileSync(path.join(ROOT, 'LICENSE'), 'utf8');
	assert.match(license, /^MIT License\n\nCopyright \(c\) \d{4} \S/);
	assert.match(license, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
	const changelog = readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8');
	assert.ok(changelog.includes(`## [${pkg.version}]`), `CHANGELOG.md has no "## [${pkg.version}]" section`);
	// npm packs README.md, LICENSE and package.json whatever `files` says; CHANGELOG.md only when listed
	assert.ok(pkg.files.includes('CHANGELOG.md'));
});

const workflow = yaml.load(readFileSync(path.join(ROOT, '.github', 'workflows', 'publish.yml'), 'utf8')) as Workflow;

function stepRunning(job: Job, command: RegExp): Step | undefined {
	return job.steps.find((s) => typeof s.run === 'string' && command.test(s.run));
}

test('publish.yml parses: triggered by a v* tag (or by hand), publishing after the test job', () => {
	assert.equal(typeof workflow, 'object');
	assert.deepEqual(workflow.on.push?.tags, ['v*']);
	assert.ok('workflow_dispatch' in workflow.on);
	assert.deepEqual(Object.keys(workflow.jobs).sort(), ['publish', 'test']);
	assert.equal(workflow.jobs.publish.needs, 'test');
});

test('publish.yml: `npm publish --provenance` with id-token: write on the publish job only', () => {
	const { publish, test: tests } = workflow.jobs;
	assert.deepEqual(workflow.permissions, { contents: 'read' }, 'the workflow itself grants read only');
	assert.equal(publish.permissions?.['id-token'], 'write');
	assert.equal(tests.permissions, undefined, 'the test job gets no OIDC token');
	const publishStep = stepRunning(publish, /\bnpm publish\b/);
	assert.ok(publishStep, 'a step runs npm publish');
	assert.match(publishStep.run!, /^npm publish --provenance --access public$/);
	const names = publish.steps.map((s) => s.run ?? s.uses ?? '');
	const at = (re: RegExp) => names.findIndex((n) => re.test(n));
	assert.ok(at(/^actions\/checkout@v\d+$/) === 0, 'checks out first');
	assert.ok(at(/npm run build/) > at(/npm install|npm ci/), 'installs, then builds');
	assert.ok(at(/npm publish/) > at(/npm run build/), 'builds, then publishes');
	assert.ok(at(/GITHUB_REF_NAME/) < at(/npm publish/), 'checks the tag before publishing');
});

test('publish.yml: Node 24 with the npm registry for the publish job (npm >= 11.5.1 for trusted publishing)', () => {
	const setup = workflow.jobs.publish.steps.find((s) => s.uses?.startsWith('actions/setup-node@'));
	assert.ok(setup?.with);
	assert.ok(Number.parseInt(String(setup.with['node-version']), 10) >= 24, String(setup.with['node-version']));
	assert.equal(setup.with['registry-url'], 'https://registry.npmjs.org');
	assert.equal(JSON.stringify(workflow).includes('NPM_TOKEN'), false, 'no long-lived npm token: trusted publishing');
});

test('publish.yml: the tag check compares the tag with package.json version', () => {
	const check = stepRunning(workflow.jobs.publish, /GITHUB_REF_NAME/);
	assert.ok(check);
	assert.match(check.run!, /require\('\.\/package\.json'\)\.version/);
	assert.match(check.run!, /"v\$\{version\}"/);
	assert.match(check.run!, /exit 1/);
});

test('publish.yml: the test job runs CI’s own command (.ci/run: lint, npm test) with PostgreSQL 15 and Redis', () => {
	const job = workflow.jobs.test;
	assert.ok(stepRunning(job, /^bash \.ci\/run$/));
	const ci = readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8');
	assert.match(ci, /^npm run lint$/m);
	assert.match(ci, /^npm test$/m);
	assert.match(job.services?.postgres.image ?? '', /^postgres:15/);
	assert.match(job.services?.redis.image ?? '', /^redis:/);
});
