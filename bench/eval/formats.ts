/**
 * The bytes of an evaluation document in its format (bench/eval/evalSet.ts `format`), rendered at run time from
 * its checked-in text (corpus/<id>.txt), so the repository holds no generated binaries:
 *  - html: a web page (<title>, a <nav> menu and a <script> the extractor drops, <h1>/<h2>, <p>, <ul>, <pre>, a footer);
 *  - md: Markdown (`# title`, `## ` headings as written, lists, indented code);
 *  - txt: plain text (headings without their `## ` marker);
 *  - pdf: a PDF 1.4 of Helvetica 10 pt text lines wrapped at 95 characters, 54 lines a page, several pages when the
 *    text is long (its own small writer: WinAnsi text, characters outside Latin-1 replaced; `(`, `)` and `\` escaped);
 *  - docx: a Word document, one paragraph per heading, paragraph, list item and code line
 *    (test/helpers/documents.ts docxWithParagraphs, the text XML-escaped here).
 * What the bot extracts from them is the project's own business (Document → Extract: html-to-text, pdf-parse,
 * mammoth); the texts are ASCII, so the extraction can keep every word.
 */
import { docxWithParagraphs } from '../../test/helpers/documents';
import type { DocumentFormat } from './evalSet';

export type Block =
	| { type: 'heading'; text: string }
	| { type: 'paragraph'; text: string }
	| { type: 'list'; items: string[] }
	| { type: 'code'; lines: string[] };

/** `text` (corpus/<id>.txt) → its title (first line) and blocks. */
export function parseText(text: string): { title: string; blocks: Block[] } {
	const [title, ...rest] = text.replace(/\r\n/g, '\n').split('\n');
	const blocks: Block[] = [];
	for (const raw of rest.join('\n').split(/\n\s*\n/)) {
		const lines = raw.split('\n').filter((l) => l.trim() !== '');
		if (lines.length === 0) continue;
		if (lines.every((l) => l.startsWith('    '))) blocks.push({ type: 'code', lines: lines.map((l) => l.slice(4)) });
		else if (lines.length === 1 && lines[0].startsWith('## '))
			blocks.push({ type: 'heading', text: lines[0].slice(3) });
		else if (lines.length === 1) blocks.push({ type: 'paragraph', text: lines[0] });
		// several lines (list items, or a timeline's one-line entries): one item each
		else blocks.push({ type: 'list', items: lines });
	}
	return { title: title.trim(), blocks };
}

const escapeXml = (s: string) =>
	s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function html(title: string, blocks: Block[]): string {
	const body = blocks
		.map((b) => {
			if (b.type === 'heading') return `<h2>${escapeXml(b.text)}</h2>`;
			if (b.type === 'paragraph') return `<p>${escapeXml(b.text)}</p>`;
			if (b.type === 'code') return `<pre><code>${escapeXml(b.lines.join('\n'))}</code></pre>`;
			const ordered = /^\d+\. /.test(b.items[0]);
			const items = b.items.map((i) => `<li>${escapeXml(i.replace(/^(- |\d+\. )/, ''))}</li>`).join('');
			return ordered ? `<ol>${items}</ol>` : `<ul>${items}</ul>`;
		})
		.join('\n');
	return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<style>body { font-family: sans-serif; max-width: 48rem; }</style></head>
<body><nav><a href="/">Home</a> <a href="/docs">Docs</a> <a href="/blog">Blog</a> <a href="/login">Log in</a></nav>
<main><h1>${escapeXml(title)}</h1>
${body}
</main><script>window.analytics && window.analytics.page();</script></body></html>`;
}

function plain(title: string, blocks: Block[], markdown: boolean): string {
	const parts = blocks.map((b) => {
		if (b.type === 'heading') return markdown ? `## ${b.text}` : b.text;
		if (b.type === 'paragraph') return b.text;
		if (b.type === 'list') return b.items.join('\n');
		return b.lines.map((l) => `    ${l}`).join('\n');
	});
	return `${markdown ? '# ' : ''}${title}\n\n${parts.join('\n\n')}\n`;
}

/** `text` wrapped into lines of at most `width` characters (a longer word gets a line of its own). */
function wrap(text: string, width: number): string[] {
	const lines: string[] = [];
	let line = '';
	for (const word of text.split(/\s+/).filter(Boolean)) {
		if (line && line.length + 1 + word.length > width) {
			lines.push(line);
			line = word;
		} else line = line ? `${line} ${word}` : word;
	}
	if (line) lines.push(line);
	return lines;
}

const PDF_LINES_PER_PAGE = 54;

/** A PDF of `lines` (one text line each, '' an empty line), Helvetica 10 pt, 54 lines a page. */
export function pdfOfLines(lines: string[]): Buffer {
	const pdfString = (s: string) =>
		s
			.replace(/[^\x20-\x7e]/g, '?')
			.replace(/\\/g, '\\\\')
			.replace(/\(/g, '\\(')
			.replace(/\)/g, '\\)');
	const pages: string[][] = [];
	for (let i = 0; i < lines.length; i += PDF_LINES_PER_PAGE) pages.push(lines.slice(i, i + PDF_LINES_PER_PAGE));
	if (pages.length === 0) pages.push([]);
	// objects: 1 catalog, 2 pages, 3 font, then per page: its page object and its content stream
	const objects: string[] = [
		'<< /Type /Catalog /Pages 2 0 R >>',
		`<< /Type /Pages /Kids [${pages.map((_, i) => `${4 + 2 * i} 0 R`).join(' ')}] /Count ${pages.length} >>`,
		'<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
	];
	pages.forEach((page, i) => {
		const stream = `BT /F1 10 Tf 14 TL 56 760 Td\n${page.map((l) => `(${pdfString(l)}) Tj T*`).join('\n')}\nET`;
		objects.push(
			`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${5 + 2 * i} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`,
			`<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`,
		);
	});
	let out = '%PDF-1.4\n';
	const offsets: number[] = [];
	objects.forEach((body, i) => {
		offsets.push(Buffer.byteLength(out, 'latin1'));
		out += `${i + 1} 0 obj\n${body}\nendobj\n`;
	});
	const xref = Buffer.byteLength(out, 'latin1');
	out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
	out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
	return Buffer.from(out, 'latin1');
}

function pdf(title: string, blocks: Block[]): Buffer {
	const lines: string[] = [title, ''];
	for (const b of blocks) {
		if (b.type === 'heading') lines.push(b.text);
		else if (b.type === 'paragraph') lines.push(...wrap(b.text, 95));
		else if (b.type === 'list') for (const item of b.items) lines.push(...wrap(item, 95));
		else lines.push(...b.lines);
		lines.push('');
	}
	return pdfOfLines(lines);
}

async function docx(title: string, blocks: Block[]): Promise<Buffer> {
	const paragraphs = [
		title,
		...blocks.flatMap((b) =>
			b.type === 'heading' || b.type === 'paragraph' ? [b.text] : b.type === 'list' ? b.items : b.lines,
		),
	];
	return docxWithParagraphs(paragraphs.map(escapeXml));
}

export const MIME_TYPES: Record<DocumentFormat, string> = {
	html: 'text/html; charset=utf-8',
	md: 'text/markdown; charset=utf-8',
	txt: 'text/plain; charset=utf-8',
	pdf: 'application/pdf',
	docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};

/** The document's bytes in `format`, with its MIME type and a file name (`<id>.<format>`). */
export async function render(
	id: string,
	text: string,
	format: DocumentFormat,
): Promise<{ bytes: Buffer; mimeType: string; fileName: string }> {
	const { title, blocks } = parseText(text);
	const bytes =
		format === 'html'
			? Buffer.from(html(title, blocks))
			: format === 'md' || format === 'txt'
				? Buffer.from(plain(title, blocks, format === 'md'))
				: format === 'pdf'
					? pdf(title, blocks)
					: await docx(title, blocks);
	return { bytes, mimeType: MIME_TYPES[format], fileName: `${id}.${format}` };
}
