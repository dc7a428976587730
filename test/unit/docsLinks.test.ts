/**
 * Every documentation link n8n shows in the editor points at a page that exists (issue 27 §2): each
 * credential's `documentationUrl` and each codex file's (nodes/<Node>/<Node>.node.json) primary and credential
 * documentation URL starts with the one base URL (nodes/shared/docsUrl.ts: docs/ of package.json's repository
 * on GitHub), and the rest resolves — without the network — to a file of this repository's docs/ and, for a
 * `#anchor`, to a heading of that file (GitHub's heading ids: lower case, punctuation dropped, spaces → `-`,
 * `-1`, `-2` … for repeats). The codex names its node (`n8n-nodes-contracts.<name>`) and its latest version,
 * and links the documentation of every credential the node uses.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from '@jest/globals';
import type { ICredentialType, INodeType } from 'n8n-workflow';
import { DOCS_BASE_URL, docsUrl } from '../../nodes/shared/docsUrl';

const ROOT = path.resolve(__dirname, '..', '..');
const DOCS = path.join(ROOT, 'docs');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
	name: string;
	repository: { url: string };
};

interface Codex {
	node: string;
	nodeVersion: string;
	codexVersion: string;
	categories: string[];
	resources: { primaryDocumentation: { url: string }[]; credentialDocumentation?: { url: string }[] };
}

const NODE_NAMES = readdirSync(path.join(ROOT, 'nodes')).filter((d) =>
	existsSync(path.join(ROOT, 'nodes', d, `${d}.node.ts`)),
);
const nodes = NODE_NAMES.map((name) => {
	const module = require(`../../nodes/${name}/${name}.node.ts`) as Record<string, new () => INodeType>;
	const codex = JSON.parse(readFileSync(path.join(ROOT, 'nodes', name, `${name}.node.json`), 'utf8')) as Codex;
	return { name, description: new module[name]().description, codex };
});
const credentials = readdirSync(path.join(ROOT, 'credentials'))
	.filter((f) => f.endsWith('.credentials.ts'))
	.map((file) => {
		const module = require(`../../credentials/${file}`) as Record<string, new () => ICredentialType>;
		const [Credential] = Object.values(module);
		return { file, credential: new Credential() };
	});

/** GitHub's id of a Markdown heading (as github-slugger computes it, for the text after the `#`s). */
function headingIds(markdown: string): Set<string> {
	const ids = new Set<string>();
	const seen = new Map<string, number>();
	let fenced = false;
	for (const line of markdown.split('\n')) {
		if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
		const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
		if (!heading) continue;
		const text = heading[1]
			.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link: its text
			.replace(/[*`]/g, ''); // emphasis and code marks (an underscore stays, as on GitHub)
		const base = text
			.toLowerCase()
			.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
			.replace(/ /g, '-');
		const n = seen.get(base) ?? 0;
		seen.set(base, n + 1);
		ids.add(n === 0 ? base : `${base}-${n}`);
	}
	return ids;
}

/** Why `url` does not resolve to a file (and heading) of docs/, or null when it does. */
function unresolved(url: string): string | null {
	if (!url.startsWith(DOCS_BASE_URL)) return `${url} does not start with ${DOCS_BASE_URL}`;
	const [page, anchor, ...more] = url.slice(DOCS_BASE_URL.length).split('#');
	if (more.length) return `${url} has two #`;
	const file = path.resolve(DOCS, decodeURIComponent(page));
	if (!file.startsWith(DOCS + path.sep)) return `${url} leaves docs/`;
	if (!existsSync(file) || !file.endsWith('.md')) return `${url}: docs/${page} does not exist`;
	if (anchor === undefined) return null;
	const ids = headingIds(readFileSync(file, 'utf8'));
	return ids.has(anchor) ? null : `${url}: docs/${page} has no heading #${anchor} (it has ${[...ids].join(', ')})`;
}

test('the heading ids are GitHub’s', () => {
	const ids = headingIds(
		'# Pipeline Push (seed 001 §3 step 4, variant B)\n## Limits (node options)\n## Limits (node options)\n```\n# not a heading\n```\n## `code` and [a link](x.md)\n',
	);
	assert.deepEqual(
		[...ids],
		['pipeline-push-seed-001-3-step-4-variant-b', 'limits-node-options', 'limits-node-options-1', 'code-and-a-link'],
	);
	assert.equal(unresolved(docsUrl('credentials.md#no-such-heading'))?.includes('has no heading'), true);
	assert.equal(unresolved(docsUrl('no-such-page.md'))?.includes('does not exist'), true);
	assert.equal(unresolved('https://example.com/docs/credentials.md')?.includes('does not start with'), true);
	assert.equal(unresolved(docsUrl('../README.md'))?.includes('leaves docs/'), true);
});

test('the docs base URL is docs/ on the main branch of package.json’s repository', () => {
	const repository = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
	assert.equal(DOCS_BASE_URL, `${repository}/blob/main/docs/`);
});

test('every credential’s documentationUrl resolves to a heading of docs/', () => {
	assert.equal(credentials.length, 6);
	for (const { file, credential } of credentials) {
		assert.equal(typeof credential.documentationUrl, 'string', `${file} has a documentationUrl`);
		assert.equal(unresolved(credential.documentationUrl!), null);
	}
});

test('every codex link resolves to a page (and heading) of docs/', () => {
	assert.equal(nodes.length, 8);
	for (const { name, codex } of nodes) {
		const { primaryDocumentation, credentialDocumentation = [] } = codex.resources;
		assert.equal(primaryDocumentation.length, 1, `${name}: one primary documentation page`);
		assert.match(primaryDocumentation[0].url, /\/docs\/nodes\/[a-z-]+\.md$/, `${name}: a page of docs/nodes/`);
		for (const { url } of [...primaryDocumentation, ...credentialDocumentation]) assert.equal(unresolved(url), null);
	}
});

test('each codex names its node and latest version, and links the documentation of every credential the node uses', () => {
	const byType = new Map(credentials.map(({ credential }) => [credential.name, credential.documentationUrl]));
	for (const { name, description, codex } of nodes) {
		assert.equal(codex.node, `${pkg.name}.${description.name}`, name);
		const versions = Array.isArray(description.version) ? description.version : [description.version];
		const latest = description.defaultVersion ?? Math.max(...versions);
		assert.equal(latest, Math.max(...versions), `${name}: the default version is the latest`);
		assert.equal(codex.nodeVersion, `${latest}.0`, `${name}: codex nodeVersion of versions ${versions.join(', ')}`);
		const used = [...new Set((description.credentials ?? []).map((c) => c.name))];
		assert.deepEqual(
			(codex.resources.credentialDocumentation ?? []).map((d) => d.url),
			used.map((type) => byType.get(type)),
			`${name}: credential documentation of ${used.join(', ')}`,
		);
	}
});
