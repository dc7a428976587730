/**
 * A static check of AQL text against ArangoDB's error 1579 "access after data-modification" (FACTS:
 * ArangoDB), as strict as the server's own check (arangod's `Ast::validateAndOptimize`, which walks the
 * query in text order):
 *  - a **collection** (`FOR x IN c`, or any other use of a collection name) after a write **to that
 *    collection** in the query;
 *  - a **traversal** or shortest-path search (`OUTBOUND|INBOUND|ANY …`) after **any** write in the query,
 *    wherever its edge collections stand (same line, next line, a list of several);
 *  - a **document function** (`DOCUMENT()`, any case) after **any** write in the query;
 *  - a write to a collection first used at a lower subquery nesting level (`FOR d IN c` outside,
 *    `UPDATE … IN c` inside a subquery);
 *  - a second write to the same collection (one modification per collection per query).
 * A write takes effect at the end of its statement (after its collection name): expressions inside the
 * statement (`INSERT { x: DOCUMENT(…) } INTO c`) come before it, as on the server.
 * Strings and comments are blanked first; an identifier after `.` (attribute) or before `:` (object key)
 * is not a collection; the collection list of a leading `WITH` is not an access. Collections are the
 * names in db/arango/schema.json; `@@bind` collections count as an unknown collection ("*").
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const schema = JSON.parse(readFileSync(path.resolve(__dirname, '..', '..', 'db', 'arango', 'schema.json'), 'utf8')) as {
	documents: string[];
	edges: string[];
};
export const COLLECTIONS = new Set([...schema.documents, ...schema.edges]);
export const EDGE_COLLECTIONS = new Set(schema.edges);

export interface Access {
	at: number;
	kind: 'read' | 'write' | 'traversal' | 'document';
	/** The collection, or "*" (any: a traversal's vertices, a DOCUMENT() call, a bind collection). */
	collection: string;
	/** Subquery nesting level (0 = top). */
	level: number;
}

interface Token {
	text: string;
	upper: string;
	at: number;
}

const WRITE_KEYWORDS = new Set(['INSERT', 'UPDATE', 'REPLACE', 'REMOVE', 'UPSERT']);
const SUBQUERY_START = new Set([
	'FOR',
	'LET',
	'RETURN',
	'WITH',
	'INSERT',
	'UPDATE',
	'REPLACE',
	'REMOVE',
	'UPSERT',
	'COLLECT',
	'FILTER',
]);
const COMPARISON = new Set(['==', '!=', '<', '<=', '>', '>=', 'IN', 'NOT', 'LIKE', '=~', '!~']);
/** Functions flagged CanReadDocuments that ArangoCAS could use. */
const DOCUMENT_FUNCTIONS = new Set(['DOCUMENT']);

/** Blanks out string literals and comments (keeping offsets) so keywords inside them are not matched. */
function code(aql: string): string {
	return aql.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\/|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`/g, (m) =>
		m.startsWith('`') ? m : m[0] === '"' || m[0] === "'" ? `"${' '.repeat(m.length - 2)}"` : ' '.repeat(m.length),
	);
}

function tokens(aql: string): Token[] {
	const out: Token[] = [];
	for (const m of code(aql).matchAll(
		/@@?[A-Za-z_][A-Za-z0-9_]*|`[^`]*`|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|"\s*"|==|!=|<=|>=|=~|!~|\.\.|[^\s]/g,
	)) {
		const text = m[0].startsWith('`') ? m[0].slice(1, -1) : m[0];
		out.push({ text, upper: text.toUpperCase(), at: m.index });
	}
	return out;
}

/** Edge collections of the traversal whose direction keyword is token `i` (identifiers up to OPTIONS/PRUNE/next statement). */
function traversalEdges(t: Token[], i: number): string[] {
	const stops = new Set([
		'OPTIONS',
		'PRUNE',
		'FILTER',
		'LET',
		'FOR',
		'RETURN',
		'SORT',
		'LIMIT',
		'COLLECT',
		'INSERT',
		'UPDATE',
		'REPLACE',
		'REMOVE',
		'UPSERT',
		'SEARCH',
		'WINDOW',
	]);
	const found: string[] = [];
	let depth = 0;
	for (let j = i + 1; j < t.length; j++) {
		const tok = t[j];
		if (tok.text === '(' || tok.text === '[' || tok.text === '{') depth++;
		else if (tok.text === ')' || tok.text === ']' || tok.text === '}') {
			if (depth === 0) break;
			depth--;
		} else if (depth === 0 && stops.has(tok.upper)) break;
		else if (
			depth === 0 &&
			t[j - 1]?.text !== '.' &&
			t[j + 1]?.text !== '(' &&
			(EDGE_COLLECTIONS.has(tok.text) || tok.text.startsWith('@@'))
		)
			found.push(tok.text);
	}
	return found;
}

/** Whether direction keyword token `i` starts a traversal (not `ANY ==`, not a later item of an edge list). */
function isTraversal(t: Token[], i: number): boolean {
	const tok = t[i];
	if (!['OUTBOUND', 'INBOUND', 'ANY'].includes(tok.upper)) return false;
	if (t[i - 1]?.text === '.' || t[i + 1]?.text === ':') return false;
	if (tok.upper === 'ANY' && COMPARISON.has(t[i + 1]?.upper ?? '')) return false;
	return t[i - 1]?.text !== ',';
}

/** Every collection access of a query in text (= execution) order. */
export function accesses(aql: string): Access[] {
	const t = tokens(aql);
	const found: Access[] = [];
	const parens: boolean[] = [];
	let level = 0;
	let i = 0;
	// A leading WITH a, b, c is a collection list, not an access.
	if (t[0]?.upper === 'WITH') {
		i = 1;
		while (i < t.length && (COLLECTIONS.has(t[i].text) || t[i].text === ',' || t[i].text.startsWith('@@'))) i++;
	}
	const pendingWrites: { end: number; collection: string }[] = [];
	for (; i < t.length; i++) {
		const tok = t[i];
		while (pendingWrites.length && pendingWrites[0].end <= i) {
			const w = pendingWrites.shift()!;
			found.push({ at: t[w.end - 1].at, kind: 'write', collection: w.collection, level });
		}
		if (tok.text === '(') {
			const sub = SUBQUERY_START.has(t[i + 1]?.upper ?? '');
			parens.push(sub);
			if (sub) level++;
			continue;
		}
		if (tok.text === ')') {
			if (parens.pop()) level--;
			continue;
		}
		const attribute = t[i - 1]?.text === '.' || t[i + 1]?.text === ':';
		if (attribute) continue;
		if (WRITE_KEYWORDS.has(tok.upper) && !(tok.upper !== 'UPSERT' && pendingWrites.some((w) => w.end > i))) {
			// the target: the first IN/INTO at this bracket depth
			let depth = 0;
			for (let j = i + 1; j < t.length; j++) {
				const x = t[j];
				if ('([{'.includes(x.text)) depth++;
				else if (')]}'.includes(x.text)) {
					if (depth === 0) break;
					depth--;
				} else if (depth === 0 && (x.upper === 'IN' || x.upper === 'INTO') && t[j + 1]) {
					const target = t[j + 1].text;
					const collection = COLLECTIONS.has(target) ? target : '*';
					pendingWrites.push({ end: j + 2, collection });
					i = j + 1; // the target name is not a read
					break;
				}
			}
			continue;
		}
		if (isTraversal(t, i)) {
			found.push({ at: tok.at, kind: 'traversal', collection: '*', level });
			for (const edge of traversalEdges(t, i))
				found.push({ at: tok.at, kind: 'read', collection: edge.startsWith('@@') ? '*' : edge, level });
			// skip the edge list so it is not counted twice
			continue;
		}
		if (DOCUMENT_FUNCTIONS.has(tok.upper) && t[i + 1]?.text === '(') {
			found.push({ at: tok.at, kind: 'document', collection: '*', level });
			continue;
		}
		if ((COLLECTIONS.has(tok.text) || tok.text.startsWith('@@')) && t[i + 1]?.text !== '(') {
			const prior = found.filter((a) => a.kind === 'read' && a.at === tok.at);
			if (prior.length === 0 && !isEdgeListItem(t, i))
				found.push({ at: tok.at, kind: 'read', collection: tok.text.startsWith('@@') ? '*' : tok.text, level });
		}
	}
	for (const w of pendingWrites)
		found.push({ at: t[w.end - 1]?.at ?? aql.length, kind: 'write', collection: w.collection, level });
	return found.sort((a, b) => a.at - b.at);
}

/** Whether token `i` is part of the edge list of a traversal (already recorded with the traversal). */
function isEdgeListItem(t: Token[], i: number): boolean {
	for (let j = i - 1; j >= 0 && j >= i - 40; j--) {
		if (isTraversal(t, j)) return traversalEdges(t, j).includes(t[i].text) && !['OPTIONS'].includes(t[i].upper);
		if (['FOR', 'LET', 'RETURN', 'FILTER'].includes(t[j].upper)) return false;
	}
	return false;
}

/** The 1579 violations of a query, each naming the line of the access and of the write before it. */
export function violations(aql: string): string[] {
	const lineOf = (at: number) => aql.slice(0, at).split('\n').length;
	const written = new Map<string, number>();
	const firstSeen = new Map<string, number>();
	let firstWrite: number | undefined;
	const problems: string[] = [];
	for (const a of accesses(aql)) {
		if (a.kind === 'traversal' || a.kind === 'document') {
			if (firstWrite !== undefined)
				problems.push(
					`line ${lineOf(a.at)}: ${a.kind === 'traversal' ? 'traversal' : 'document function'} after a write (line ${lineOf(firstWrite)})`,
				);
			continue;
		}
		const hit = a.collection === '*' ? [...written.keys()] : written.has(a.collection) ? [a.collection] : [];
		for (const c of hit)
			problems.push(
				`line ${lineOf(a.at)}: ${a.kind} of ${a.collection === '*' ? `any collection (${c})` : c} after its write on line ${lineOf(written.get(c)!)}`,
			);
		if (a.kind === 'write') {
			const seen = firstSeen.get(a.collection);
			if (seen !== undefined && seen < a.level)
				problems.push(
					`line ${lineOf(a.at)}: write of ${a.collection} in a subquery after it was used at an outer level`,
				);
			if (!written.has(a.collection)) written.set(a.collection, a.at);
			if (firstWrite === undefined) firstWrite = a.at;
		} else if (!firstSeen.has(a.collection)) firstSeen.set(a.collection, a.level);
	}
	return problems;
}

/** The collections of a leading `WITH` clause (empty when the query has none). */
export function withCollections(aql: string): string[] {
	const t = tokens(aql);
	if (t[0]?.upper !== 'WITH') return [];
	const names: string[] = [];
	for (let i = 1; i < t.length && (COLLECTIONS.has(t[i].text) || t[i].text === ','); i++)
		if (t[i].text !== ',') names.push(t[i].text);
	return names;
}

/** The edge collections of every traversal of a query. */
export function traversals(aql: string): string[][] {
	const t = tokens(aql);
	const out: string[][] = [];
	for (let i = 0; i < t.length; i++) if (isTraversal(t, i)) out.push(traversalEdges(t, i));
	return out;
}
