/**
 * One home per table (issue 28): SQL that names one of our tables lives in that table's statements module
 * (nodes/shared/statements/, mapped by TABLE_HOMES) and in db/migrations/ only, and a transaction is opened
 * by the one helper (nodes/shared/postgres/transaction.ts). Reads every .ts file under nodes/ with
 * TypeScript's parser and checks each string and template literal (comments are not read):
 *  1. outside nodes/shared/statements/, no literal is SQL naming a table of our schemas;
 *  2. in a statements module, a literal that writes a table (INSERT INTO, UPDATE, DELETE FROM) writes only
 *     tables of that module;
 *  3. in a statements module, a statement that only reads (a literal starting SELECT or WITH) starts from a
 *     table of that module (its first FROM; joins and sub-selects may name other tables; a fragment such as
 *     `(SELECT …)` handed to a builder belongs to the statement it is built into);
 *  4. no literal BEGIN / COMMIT / ROLLBACK outside the transaction helper (SAVEPOINTs are fine).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { describe, test } from '@jest/globals';
import ts from 'typescript';
import { TABLE_HOMES } from '../../nodes/shared/statements/tables';

const ROOT = resolve(__dirname, '../..');
const NODES = join(ROOT, 'nodes');
const STATEMENTS = join(NODES, 'shared/statements');
const TRANSACTION_HELPER = join(NODES, 'shared/postgres/transaction.ts');
const HOMES: Record<string, string> = TABLE_HOMES;
const SCHEMAS = [...new Set(Object.keys(HOMES).map((t) => t.split('.')[0]))];
/** A schema-qualified name of one of our schemas (a table, a view or a function). */
const QUALIFIED = new RegExp(`\\b(?:${SCHEMAS.join('|')})\\.[a-z_][a-z0-9_]*\\b`, 'g');
const SQL_WORD = /\b(?:SELECT|INSERT|UPDATE|DELETE|FROM|JOIN|RETURNING|WHERE)\b/;
const WRITE = new RegExp(
	`\\b(?:INSERT\\s+INTO|UPDATE|DELETE\\s+FROM|TRUNCATE(?:\\s+TABLE)?)\\s+((?:${SCHEMAS.join('|')})\\.[a-z_][a-z0-9_]*)`,
	'g',
);
const FIRST_FROM = new RegExp(`\\bFROM\\s+((?:${SCHEMAS.join('|')})\\.[a-z_][a-z0-9_]*)`);
const TRANSACTION_CONTROL = /^\s*(?:BEGIN|COMMIT|ROLLBACK|START\s+TRANSACTION|END)\b(?!\s+TO\b)/;

function tsFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
		e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
	);
}

/** The text of every string and template literal of `source` (a template's substitutions read `${…}`). */
export function literals(file: string, source: string): string[] {
	const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
	const found: string[] = [];
	const visit = (node: ts.Node): void => {
		if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) found.push(node.text);
		else if (ts.isTemplateExpression(node)) {
			found.push(node.head.text + node.templateSpans.map((s) => '${…}' + s.literal.text).join(''));
			node.templateSpans.forEach((s) => visit(s.expression));
			return;
		}
		ts.forEachChild(node, visit);
	};
	visit(sf);
	return found;
}

/** What is wrong with the literals of `file` (empty: nothing). */
export function problems(file: string, source: string): string[] {
	const rel = relative(ROOT, file);
	const inStatements = dirname(file) === STATEMENTS;
	const home = basename(file, '.ts');
	const out: string[] = [];
	for (const text of literals(file, source)) {
		const head = text.replace(/\s+/g, ' ').trim().slice(0, 60);
		if (file !== TRANSACTION_HELPER && TRANSACTION_CONTROL.test(text) && text.trim().split(/\s+/).length <= 3)
			out.push(
				`${rel}: opens or ends a transaction by hand ("${head}"): use inTransaction (shared/postgres/transaction.ts)`,
			);
		const names = text.match(QUALIFIED) ?? [];
		if (!names.length || !SQL_WORD.test(text)) continue;
		if (!inStatements) {
			out.push(`${rel}: SQL naming ${[...new Set(names)].join(', ')} outside nodes/shared/statements/ ("${head}")`);
			continue;
		}
		const writes = [...text.matchAll(WRITE)].map((m) => m[1]);
		for (const table of writes)
			if (HOMES[table] !== undefined && HOMES[table] !== home)
				out.push(`${rel}: writes ${table}, whose statements live in statements/${HOMES[table]}.ts ("${head}")`);
		const first = FIRST_FROM.exec(text)?.[1];
		if (
			!writes.length &&
			/^(?:SELECT|WITH)\b/.test(text.trim()) &&
			first &&
			HOMES[first] !== undefined &&
			HOMES[first] !== home
		)
			out.push(`${rel}: reads ${first} first, whose statements live in statements/${HOMES[first]}.ts ("${head}")`);
	}
	return out;
}

describe('the check itself', () => {
	const op = join(NODES, 'KnowledgeBot/actions/qa/answer.operation.ts');
	const jobs = join(STATEMENTS, 'jobs.ts');
	test('finds SQL outside the statements modules, in a string and in a template; not in a comment', () => {
		const source = [
			'// SELECT * FROM ops.jobs',
			"const a = 'SELECT id FROM tg.messages WHERE id = $1';",
			'const b = `UPDATE ops.jobs SET status = ${s}`;',
			"const label = 'ops.jobs';",
		].join('\n');
		assert.equal(problems(op, source).length, 2);
	});
	test('a statements module writes its own tables, reads from its own first; joins are fine', () => {
		assert.deepEqual(problems(jobs, "const a = 'UPDATE ops.jobs SET x = 1 FROM ops.errors e WHERE e.id = 1';"), []);
		assert.deepEqual(problems(jobs, "const a = 'SELECT j.id FROM ops.jobs j JOIN tg.messages m ON true';"), []);
		assert.equal(problems(jobs, "const a = 'INSERT INTO ops.errors (id) VALUES ($1)';").length, 1);
		assert.equal(problems(jobs, "const a = 'SELECT id FROM tg.messages';").length, 1);
	});
	test('a hand-written BEGIN is found; a savepoint is not', () => {
		assert.equal(problems(op, "await c.query('BEGIN');").length, 1);
		assert.equal(problems(op, "await c.query('COMMIT');").length, 1);
		assert.deepEqual(problems(op, "await c.query('ROLLBACK TO SAVEPOINT a');"), []);
		assert.deepEqual(problems(TRANSACTION_HELPER, "await c.query('BEGIN');"), []);
	});
});

test('every table the migrations create has a home in TABLE_HOMES, and every home is a table', () => {
	const dir = join(ROOT, 'db/migrations');
	const created = new Set<string>();
	for (const f of readdirSync(dir).filter((n) => n.endsWith('.sql')))
		for (const m of readFileSync(join(dir, f), 'utf8').matchAll(
			/CREATE\s+(?:UNLOGGED\s+)?(?:TABLE|(?:OR\s+REPLACE\s+)?(?:MATERIALIZED\s+)?VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_]+\.[a-z0-9_]+)/g,
		))
			created.add(m[1]);
	assert.deepEqual([...created].sort(), Object.keys(HOMES).sort());
});

test('every statements module named in TABLE_HOMES exists', () => {
	const files = new Set(readdirSync(STATEMENTS).map((f) => basename(f, '.ts')));
	assert.deepEqual(
		[...new Set(Object.values(HOMES))].filter((m) => !files.has(m)),
		[],
	);
});

test('SQL naming a table lives in its statements module; transactions only through inTransaction', () => {
	const files = tsFiles(NODES);
	assert.ok(files.length > 50, `read ${files.length} files`);
	assert.deepEqual(
		files.flatMap((file) => problems(file, readFileSync(file, 'utf8'))),
		[],
	);
});
