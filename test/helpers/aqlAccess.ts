/**
 * A static check of AQL text against ArangoDB's rule (error 1579, FACTS: ArangoDB): a collection may be
 * modified once per query, and must not be read, traversed or written again after it was modified.
 *
 * It lists the collection accesses of a query in text order — which is execution order for the
 * straight-line LET/FOR queries ArangoCAS sends — and reports every access to a collection after its
 * write. Recognised accesses:
 *  - `FOR x IN <collection>` (read), `DOCUMENT("<collection>", …)` (read), `DOCUMENT(<expr>)` (read of any
 *    collection: "*");
 *  - `… OUTBOUND|INBOUND|ANY <start> <edge collection>` (read of the edges and of any vertex collection);
 *  - `INSERT|UPDATE|REPLACE|REMOVE|UPSERT … IN|INTO <collection>` (write).
 * Collections are the names in db/arango/schema.json, so a variable named like one is not mistaken.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const schema = JSON.parse(readFileSync(path.resolve(__dirname, '..', '..', 'db', 'arango', 'schema.json'), 'utf8')) as {
	documents: string[];
	edges: string[];
};
export const COLLECTIONS = new Set([...schema.documents, ...schema.edges]);

export interface Access {
	at: number;
	kind: 'read' | 'write';
	collection: string;
}

/** Blanks out string literals and comments (keeping offsets) so keywords inside them are not matched. */
function code(aql: string): string {
	return aql.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (m) => ' '.repeat(m.length));
}

export function accesses(aql: string): Access[] {
	const text = code(aql);
	const found: Access[] = [];
	const ident = '[A-Za-z_][A-Za-z0-9_]*';
	for (const m of text.matchAll(new RegExp(`\\bFOR\\s+${ident}(?:\\s*,\\s*${ident}){0,2}\\s+IN\\s+(${ident})\\b(?!\\s*\\()`, 'g'))) {
		if (COLLECTIONS.has(m[1])) found.push({ at: m.index, kind: 'read', collection: m[1] });
	}
	for (const m of text.matchAll(/\bDOCUMENT\s*\(\s*(?:"([A-Za-z0-9_]+)"|'([A-Za-z0-9_]+)')?/g)) {
		const literal = m[1] ?? m[2];
		const next = text.slice(m.index + m[0].length).trimStart();
		// DOCUMENT("coll", key) names its collection; DOCUMENT("coll/key") or DOCUMENT(expr) may read any.
		const named = literal && COLLECTIONS.has(literal) && next.startsWith(',');
		found.push({ at: m.index, kind: 'read', collection: named ? literal : '*' });
	}
	for (const m of text.matchAll(new RegExp(`\\b(?:OUTBOUND|INBOUND|ANY)\\b([^\\n]*?)\\s(${ident})\\s*(?:OPTIONS\\b[^\\n]*)?$`, 'gm'))) {
		if (!COLLECTIONS.has(m[2])) continue;
		found.push({ at: m.index, kind: 'read', collection: m[2] });
		found.push({ at: m.index, kind: 'read', collection: '*' });
	}
	for (const m of text.matchAll(new RegExp(`\\b(INSERT|UPDATE|REPLACE|REMOVE|UPSERT)\\b[\\s\\S]*?\\b(?:IN|INTO)\\s+(${ident})\\b`, 'g'))) {
		if (COLLECTIONS.has(m[2])) found.push({ at: m.index, kind: 'write', collection: m[2] });
	}
	return found.sort((a, b) => a.at - b.at);
}

/** The 1579 violations of a query: each access after its collection's write, with the line it is on. */
export function violations(aql: string): string[] {
	const written = new Map<string, number>();
	const problems: string[] = [];
	const lineOf = (at: number) => aql.slice(0, at).split('\n').length;
	for (const access of accesses(aql)) {
		const hit = access.collection === '*' ? [...written.keys()] : written.has(access.collection) ? [access.collection] : [];
		for (const collection of hit) {
			problems.push(`line ${lineOf(access.at)}: ${access.kind} of ${access.collection === '*' ? `any collection (${collection})` : collection} after its write on line ${lineOf(written.get(collection)!)}`);
		}
		if (access.kind === 'write' && !written.has(access.collection)) written.set(access.collection, access.at);
	}
	return problems;
}
