/**
 * Text of a stored body by its type (WF33 of seed 003), with maintained libraries:
 *  - HTML: html-to-text (links and images dropped, headings and paragraphs kept as lines); title from <title>;
 *  - PDF: pdf-parse (pdf.js) page text, in a worker thread of its own (./pdfText.ts: pdf-parse's polyfills
 *    must not reach the n8n process's globals; time and heap bounded);
 *  - DOCX: mammoth raw text;
 *  - text/* , JSON, XML, Markdown: UTF-8 as is.
 * The type comes from the MIME type, else the file name's extension, else the first bytes (%PDF, PK,
 * <html). Token counts use gpt-tokenizer (cl100k/o200k BPE as OpenAI models count).
 */
import { convert } from 'html-to-text';
import mammoth from 'mammoth';
import { encode } from 'gpt-tokenizer';
import { pdfText } from './pdfText';

export type DocumentKind = 'html' | 'pdf' | 'docx' | 'text';

export class UnsupportedTypeError extends Error {
	constructor(readonly mimeType: string | null) {
		super(`no text extractor for ${mimeType ?? 'an unknown type'}`);
	}
}

const DOCX_MIME = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** @throws UnsupportedTypeError for images, archives and other binary types */
export function kindOf(bytes: Buffer, mimeType: string | null, fileName: string | null = null): DocumentKind {
	const mime = (mimeType ?? '').split(';')[0].trim().toLowerCase();
	const ext = (fileName ?? '').toLowerCase().split('.').pop() ?? '';
	if (mime === 'text/html' || mime === 'application/xhtml+xml' || ext === 'html' || ext === 'htm') return 'html';
	if (mime === 'application/pdf' || ext === 'pdf') return 'pdf';
	if (mime === DOCX_MIME || ext === 'docx') return 'docx';
	if (
		mime.startsWith('text/') ||
		['application/json', 'application/xml', 'application/markdown'].includes(mime) ||
		['txt', 'md', 'csv', 'json', 'xml'].includes(ext)
	)
		return 'text';
	const head = bytes.subarray(0, 512).toString('latin1');
	if (head.startsWith('%PDF-')) return 'pdf';
	if (/^\s*(<!doctype html|<html)/i.test(head)) return 'html';
	throw new UnsupportedTypeError(mimeType);
}

/** Number of BPE tokens of `text` (gpt-tokenizer's default encoding). */
export function tokenCount(text: string): number {
	return encode(text).length;
}

/**
 * @returns `{ kind, text, title }` (text trimmed; title for HTML only)
 * @throws UnsupportedTypeError; the libraries' parse errors (a corrupt PDF or DOCX)
 */
export async function extractText(
	bytes: Buffer,
	mimeType: string | null,
	fileName: string | null = null,
): Promise<{ kind: DocumentKind; text: string; title: string | null }> {
	const kind = kindOf(bytes, mimeType, fileName);
	if (kind === 'html') {
		const html = bytes.toString('utf8');
		const title = /<title[^>]*>([^<]*)<\/title>/i.exec(html)?.[1]?.trim() || null;
		const text = convert(html, {
			wordwrap: false,
			selectors: [
				{ selector: 'a', options: { ignoreHref: true } },
				{ selector: 'img', format: 'skip' },
				{ selector: 'script', format: 'skip' },
				{ selector: 'style', format: 'skip' },
				{ selector: 'nav', format: 'skip' },
				{ selector: 'h1', options: { uppercase: false } },
				{ selector: 'h2', options: { uppercase: false } },
				{ selector: 'h3', options: { uppercase: false } },
			],
		});
		return { kind, text: text.trim(), title };
	}
	if (kind === 'pdf') {
		return { kind, text: (await pdfText(bytes)).trim(), title: null };
	}
	if (kind === 'docx') {
		const result = await mammoth.extractRawText({ buffer: bytes });
		return { kind, text: result.value.trim(), title: null };
	}
	return { kind, text: bytes.toString('utf8').trim(), title: null };
}
