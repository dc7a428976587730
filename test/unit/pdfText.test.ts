/**
 * PDF text runs in a worker thread (nodes/KnowledgeBot/actions/document/pdfText.ts): pdf-parse's core-js
 * polyfills (Array.prototype.push, JSON.parse, Promise.withResolvers…) must never reach the globals of the
 * n8n process that loads this package, and a PDF is bounded in time and heap.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from '@jest/globals';
import { pdfWithText } from '../helpers/documents';

// Taken before any module of the package is loaded (they are required below, after this line).
const native = {
	push: Array.prototype.push,
	parse: JSON.parse,
	withResolvers: (Promise as { withResolvers?: unknown }).withResolvers,
	union: (Set.prototype as { union?: unknown }).union,
};

test('every node of the package loads, and PDFs are read, without changing the globals pdf-parse would polyfill', async () => {
	const nodesDir = path.join(__dirname, '..', '..', 'nodes');
	for (const dir of fs.readdirSync(nodesDir)) {
		const file = path.join(nodesDir, dir, `${dir}.node.ts`);
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		if (fs.existsSync(file)) require(file);
	}
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const { extractText } =
		require('../../nodes/KnowledgeBot/actions/document/extractText') as typeof import('../../nodes/KnowledgeBot/actions/document/extractText');
	const extracted = await extractText(pdfWithText('Quarterly report, page one'), 'application/pdf', 'report.pdf');
	assert.equal(extracted.kind, 'pdf');
	assert.match(extracted.text, /Quarterly report, page one/);
	assert.equal(Array.prototype.push, native.push, 'Array.prototype.push is the native one');
	assert.equal(JSON.parse, native.parse, 'JSON.parse is the native one');
	assert.equal((Promise as { withResolvers?: unknown }).withResolvers, native.withResolvers);
	assert.equal((Set.prototype as { union?: unknown }).union, native.union);
	assert.match(Function.prototype.toString.call(Array.prototype.push), /\[native code\]/);
});

test('a PDF that is not one → the error of pdf.js; a PDF past its time limit → "took longer"; the process goes on', async () => {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const { pdfText } =
		require('../../nodes/KnowledgeBot/actions/document/pdfText') as typeof import('../../nodes/KnowledgeBot/actions/document/pdfText');
	await assert.rejects(
		pdfText(Buffer.from('%PDF-1.4\nnot really a pdf')),
		(error: Error) => error instanceof Error && error.message.length > 0 && !/took longer/.test(error.message),
	);
	await assert.rejects(pdfText(pdfWithText('slow'), { timeoutMs: 1 }), /PDF text extraction took longer than 1 ms/);
	assert.match(await pdfText(pdfWithText('still fine')), /still fine/);
});
