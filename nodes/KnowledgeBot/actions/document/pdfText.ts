/**
 * Page text of a PDF with pdf-parse (pdf.js), run in a `worker_threads` Worker of its own, never in the
 * n8n process's main isolate: loading pdf-parse installs core-js polyfills on the globals of the isolate
 * that loads it (among them `Array.prototype.push` and `JSON.parse` replaced by JavaScript functions,
 * `Promise.withResolvers`, `Set.prototype.union`, `navigator`, `DOMMatrix`), which would slow down and
 * change every workflow of the n8n process that loaded this package (issue 14 found it in a CPU profile
 * of WF10). The worker also bounds a hostile PDF: its heap (`maxHeapMb`) and its time (`timeoutMs`).
 *
 * `pdfText(bytes, { timeoutMs, maxHeapMb })` → the text, pages joined with no separator (as
 * `getText({ pageJoiner: '' })`), not trimmed.
 * @throws Error with pdf.js's message (e.g. "Invalid PDF structure."), "PDF text extraction took longer
 *   than <ms> ms" or "PDF text extraction stopped: <reason>" (heap limit, worker crash). The caller
 *   records the message as the document's extraction failure (extract.operation.ts).
 */
import { Worker } from 'node:worker_threads';

/** Default time limit of one PDF (ms). */
export const PDF_TIMEOUT_MS = 60_000;
/** Default heap limit of the worker (MiB of V8 old generation). */
export const PDF_MAX_HEAP_MB = 512;

/** The worker's program (CommonJS, run with `eval`): loads pdf-parse from the path the parent resolved. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { PDFParse } = require(workerData.module);
(async () => {
	const parser = new PDFParse({ data: workerData.bytes });
	try {
		const result = await parser.getText({ pageJoiner: '' });
		parentPort.postMessage({ ok: true, text: result.text });
	} catch (error) {
		parentPort.postMessage({ ok: false, message: String((error && error.message) || error) });
	} finally {
		await parser.destroy().catch(() => undefined);
	}
})();
`;

export interface PdfTextOptions {
	/** ms before the worker is terminated (default PDF_TIMEOUT_MS) */
	timeoutMs?: number;
	/** MiB of heap the worker may use (default PDF_MAX_HEAP_MB) */
	maxHeapMb?: number;
}

export function pdfText(bytes: Buffer, options: PdfTextOptions = {}): Promise<string> {
	const timeoutMs = options.timeoutMs ?? PDF_TIMEOUT_MS;
	return new Promise<string>((resolve, reject) => {
		const worker = new Worker(WORKER, {
			eval: true,
			// the bytes are copied into the worker (a Buffer may share a pooled ArrayBuffer: never transfer it)
			workerData: { module: require.resolve('pdf-parse'), bytes: new Uint8Array(bytes) },
			resourceLimits: { maxOldGenerationSizeMb: options.maxHeapMb ?? PDF_MAX_HEAP_MB },
			stdout: true,
			stderr: true,
		});
		let settled = false;
		const settle = (error: Error | null, text?: string) => {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			void worker.terminate();
			if (error) reject(error);
			else resolve(text!);
		};
		const timer = setTimeout(
			() => settle(new Error(`PDF text extraction took longer than ${timeoutMs} ms`)),
			timeoutMs,
		);
		// pdf.js warns on stdout/stderr for damaged files: not n8n's log
		worker.stdout.resume();
		worker.stderr.resume();
		worker.once('message', (m: { ok: boolean; text?: string; message?: string }) =>
			settle(m.ok ? null : new Error(m.message), m.text ?? ''),
		);
		worker.once('error', (error) => settle(new Error(`PDF text extraction stopped: ${error.message}`)));
		worker.once('exit', (code) => settle(new Error(`PDF text extraction stopped: worker exited with code ${code}`)));
	});
}
