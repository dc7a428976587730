/**
 * The answer evaluation set of issue 30 (`npm run eval:answer`, bench/answerEval.bench.ts): a corpus of a small
 * company's documents shared in Telegram chats, and questions asked in those chats with the documents an answer
 * should cite.
 *
 * Files (all under bench/eval/):
 *  - corpus.json: the people (Telegram users), the groups (chats, with their members) and the documents: `id`,
 *    `title` (the first line of the text), `genre` (for the reader), `format` (html | md | txt | pdf | docx: the
 *    bytes the bot is sent, rendered at run time by ./formats.ts), `delivery` (`url`: a link posted in the chat,
 *    served by a page server; `file`: a Telegram document attachment, served by the Bot API stand-in) and
 *    `shared_in` (`{ group }`: posted in that group; `{ dm }`: sent to the bot in that person's private chat);
 *  - corpus/<id>.txt: each document's text (first line the title, `## ` headings, blank lines between paragraphs,
 *    `- ` list items, four-space indented code);
 *  - questions.json: `{ version: 1, questions: [...] }`, each question with `asker`, `channel` (`group` with its
 *    `group`, or `dm`: the asker's private chat), `kind` (`answer`: `expect` lists the documents that should be
 *    cited; `off-topic`: nothing in the corpus answers it; `not-visible`: `about` names the document that would
 *    answer it but that the asker may not see where they ask), and `acceptable`: documents that may be cited
 *    without being wrong (near-overlaps), counted neither for nor against recall.
 * Who may see what (seed 003 §0.2, the rule the answer operation applies, restated here independently of the
 * code under test): asked in a group, that group's documents only; asked in the asker's dm, their own dm
 * documents and the documents of every group they are a member of.
 * `loadEvalSet()` validates both files with the zod schemas below and the cross-references (every id named
 * exists, every text file exists and starts with the document's title); it throws an Error naming the problem.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

export const EVAL_DIR = __dirname;

const Id = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes');

export const Person = z.object({
	id: Id,
	/** Telegram user id (also the id of their private chat with the bot) */
	tg_user_id: z.number().int().positive(),
	first_name: z.string().min(1),
});

export const Group = z.object({
	id: Id,
	/** Telegram chat id of the supergroup (negative) */
	chat_id: z.number().int().negative(),
	title: z.string().min(1),
	members: z.array(Id).min(1),
});

export const DOCUMENT_FORMATS = ['html', 'md', 'txt', 'pdf', 'docx'] as const;
export type DocumentFormat = (typeof DOCUMENT_FORMATS)[number];

export const EvalDocument = z.object({
	id: Id,
	title: z.string().min(1),
	genre: z.string().min(1),
	format: z.enum(DOCUMENT_FORMATS),
	delivery: z.enum(['url', 'file']),
	shared_in: z.union([z.object({ group: Id }).strict(), z.object({ dm: Id }).strict()]),
});
export type EvalDocument = z.infer<typeof EvalDocument>;

export const Corpus = z.object({
	tenant: z.string().min(1),
	people: z.array(Person).min(1),
	groups: z.array(Group).min(1),
	documents: z.array(EvalDocument).min(1),
});
export type Corpus = z.infer<typeof Corpus>;

export const EvalQuestion = z
	.object({
		id: z.string().regex(/^q\d{2,3}$/, 'must be q followed by two or three digits'),
		question: z.string().trim().min(3).max(4000),
		asker: Id,
		channel: z.enum(['group', 'dm']),
		/** the group asked in (channel group only) */
		group: Id.optional(),
		kind: z.enum(['answer', 'off-topic', 'not-visible']),
		expect: z.array(Id),
		acceptable: z.array(Id).optional(),
		/** not-visible: the document that answers it, which the asker may not see there */
		about: Id.optional(),
	})
	.strict()
	.superRefine((q, issue) => {
		const add = (path: string, message: string) =>
			issue.addIssue({ code: z.ZodIssueCode.custom, path: [path], message });
		if ((q.channel === 'group') !== (q.group !== undefined))
			add('group', 'is required for a group and absent for a dm');
		if (q.kind === 'answer' && q.expect.length === 0) add('expect', 'must name a document for kind "answer"');
		if (q.kind !== 'answer' && q.expect.length > 0) add('expect', `must be empty for kind "${q.kind}"`);
		if ((q.kind === 'not-visible') !== (q.about !== undefined)) add('about', 'is required for "not-visible" only');
		if (q.acceptable?.some((d) => q.expect.includes(d))) add('acceptable', 'must not repeat a document of expect');
	});
export type EvalQuestion = z.infer<typeof EvalQuestion>;

export const Questions = z.object({ version: z.literal(1), questions: z.array(EvalQuestion).min(1) }).strict();

export interface EvalSet {
	corpus: Corpus;
	questions: EvalQuestion[];
	/** document id → its text (corpus/<id>.txt) */
	texts: Map<string, string>;
}

function readJson(file: string): unknown {
	try {
		return JSON.parse(fs.readFileSync(file, 'utf8'));
	} catch (error) {
		throw new Error(`${path.relative(process.cwd(), file)}: ${error instanceof Error ? error.message : String(error)}`);
	}
}

function parsed<T>(schema: z.ZodType<T>, value: unknown, file: string): T {
	const result = schema.safeParse(value);
	if (result.success) return result.data;
	const issues = result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
	throw new Error(`${file} does not match its schema:\n  ${issues.join('\n  ')}`);
}

/** Documents a reply to `q` may cite (the visibility rule above). */
export function visibleTo(corpus: Corpus, q: Pick<EvalQuestion, 'asker' | 'channel' | 'group'>): Set<string> {
	const groups =
		q.channel === 'group'
			? new Set([q.group])
			: new Set(corpus.groups.filter((g) => g.members.includes(q.asker)).map((g) => g.id));
	return new Set(
		corpus.documents
			.filter((d) =>
				'group' in d.shared_in ? groups.has(d.shared_in.group) : q.channel === 'dm' && d.shared_in.dm === q.asker,
			)
			.map((d) => d.id),
	);
}

/**
 * Reads and checks bench/eval (or `dir`).
 * @throws Error naming the file and the field for a schema violation, a duplicate id, an unknown person, group
 *   or document, a group question by a non-member, a missing text file or a text whose first line is not the title
 */
export function loadEvalSet(dir = EVAL_DIR): EvalSet {
	const corpus = parsed(Corpus, readJson(path.join(dir, 'corpus.json')), 'corpus.json');
	const { questions } = parsed(Questions, readJson(path.join(dir, 'questions.json')), 'questions.json');
	const problems: string[] = [];
	const unique = (what: string, ids: string[]) => {
		const seen = new Set<string>();
		for (const id of ids) {
			if (seen.has(id)) problems.push(`${what} id ${id} is used twice`);
			seen.add(id);
		}
		return seen;
	};
	const people = unique(
		'person',
		corpus.people.map((p) => p.id),
	);
	const groups = unique(
		'group',
		corpus.groups.map((g) => g.id),
	);
	const documents = unique(
		'document',
		corpus.documents.map((d) => d.id),
	);
	unique(
		'question',
		questions.map((q) => q.id),
	);
	unique(
		'Telegram user',
		corpus.people.map((p) => String(p.tg_user_id)),
	);
	for (const g of corpus.groups)
		for (const m of g.members) if (!people.has(m)) problems.push(`group ${g.id}: member ${m} is not a person`);
	const texts = new Map<string, string>();
	for (const d of corpus.documents) {
		if ('group' in d.shared_in && !groups.has(d.shared_in.group))
			problems.push(`document ${d.id}: group ${d.shared_in.group} does not exist`);
		if ('dm' in d.shared_in && !people.has(d.shared_in.dm))
			problems.push(`document ${d.id}: person ${d.shared_in.dm} does not exist`);
		const file = path.join(dir, 'corpus', `${d.id}.txt`);
		if (!fs.existsSync(file)) {
			problems.push(`document ${d.id}: corpus/${d.id}.txt is missing`);
			continue;
		}
		const text = fs.readFileSync(file, 'utf8');
		if (text.split('\n', 1)[0] !== d.title)
			problems.push(`document ${d.id}: the first line of its text is not its title`);
		texts.set(d.id, text);
	}
	for (const q of questions) {
		if (!people.has(q.asker)) problems.push(`${q.id}: asker ${q.asker} is not a person`);
		if (q.group !== undefined) {
			const group = corpus.groups.find((g) => g.id === q.group);
			if (!group) problems.push(`${q.id}: group ${q.group} does not exist`);
			else if (!group.members.includes(q.asker)) problems.push(`${q.id}: ${q.asker} is not a member of ${q.group}`);
		}
		for (const d of [...q.expect, ...(q.acceptable ?? []), ...(q.about ? [q.about] : [])])
			if (!documents.has(d)) problems.push(`${q.id}: document ${d} does not exist`);
	}
	if (problems.length) throw new Error(`bench/eval is inconsistent:\n  ${problems.join('\n  ')}`);
	return { corpus, questions, texts };
}
