/**
 * No node imports another node (issue 16): a file under nodes/<A>/ may import from nodes/<A>/ and
 * nodes/shared/ only, and nodes/shared/ from no node folder. What two nodes share lives in nodes/shared/
 * (e.g. shared/acl/loadContext.ts, shared/postgres/listener.ts). Reads every .ts file under nodes/ as
 * text: static imports, `export … from`, dynamic import() and require() of relative paths.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from '@jest/globals';

const NODES = resolve(__dirname, '../../nodes');

/** Every .ts file below `dir`. */
function tsFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
		e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
	);
}

/** The relative module specifiers of a source text. */
function relativeSpecifiers(source: string): string[] {
	const found: string[] = [];
	for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"](\.[^'"]*)['"]/gm))
		found.push(m[1]);
	return found;
}

/** The top folder under nodes/ of a path (`ArangoCas`, `shared`…), or undefined outside nodes/. */
function folderOf(path: string): string | undefined {
	const rel = relative(NODES, path);
	return rel.startsWith('..') ? undefined : rel.split(sep)[0];
}

/** "file → specifier" for each import of `file` (text `source`) that reaches another node's folder. */
function crossNodeImports(file: string, source: string): string[] {
	const own = folderOf(file);
	return relativeSpecifiers(source)
		.filter((spec) => {
			const target = folderOf(resolve(dirname(file), spec));
			return target !== undefined && target !== own && target !== 'shared';
		})
		.map((spec) => `${relative(NODES, file)} → ${spec}`);
}

test('the check itself: finds an import, an export-from, a dynamic import and a require of another node; allows own and shared', () => {
	const file = join(NODES, 'KnowledgeBot/actions/qa/answer.operation.ts');
	const source = [
		"import { loadContext } from '../../../ContextLoader/actions/load.operation';",
		"export { x } from '../../../PipelineCapture/actions';",
		"const y = await import('../../../ErrorPipe/actions/normalize');",
		"const z = require('../../../ArangoCas/actions');",
		"import type { KnowledgeOperation } from '../types';",
		"import { ContractError } from '../../../shared/errors';",
		"import { z } from 'zod';",
	].join('\n');
	assert.equal(crossNodeImports(file, source).length, 4);
	assert.deepEqual(
		crossNodeImports(join(NODES, 'shared/acl/loadContext.ts'), "import { x } from '../../ContextLoader/actions/sql';"),
		['shared/acl/loadContext.ts → ../../ContextLoader/actions/sql'],
	);
});

test('no file under nodes/<A>/ imports from nodes/<B>/ (B ≠ A, B ≠ shared)', () => {
	const files = tsFiles(NODES);
	assert.ok(files.length > 50, `read ${files.length} files`);
	const offending = files.flatMap((file) => crossNodeImports(file, readFileSync(file, 'utf8')));
	assert.deepEqual(offending, []);
});
