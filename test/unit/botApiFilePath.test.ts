/**
 * staysInFileDirectory (nodes/KnowledgeBot/transport/botApi.ts, issue 25 §1): the check on a getFile
 * `file_path` before File → Download requests `<base>/file/bot<token>/<file_path>` (an allowlist of plain
 * segments). A table of paths that would leave the directory, or change the request, once a server (or a proxy
 * in front of it) reads them — dot segments, also percent-encoded, double-encoded, with path parameters (`..;`),
 * full-width or trimmed; encoded separators, spaces and control characters — and a property over arbitrary
 * text: a path it accepts stays under the directory however often it is percent-decoded, whatever path
 * parameters a server strips, and after Unicode folding or trimming.
 */
import assert from 'node:assert/strict';
import { describe, test } from '@jest/globals';
import fc from 'fast-check';
import { staysInFileDirectory } from '../../nodes/KnowledgeBot/transport/botApi';
import { hostileString, propertyParams } from '../helpers/property';

describe('staysInFileDirectory', () => {
	test.each([
		'documents/file_0.pdf',
		'photos/file_12.jpg',
		'documents/sub/file_7.pdf',
		'voice/file_3.oga',
		'stickers/file-9.webp',
		'documents/file..pdf',
	])('%j stays', (path) => assert.equal(staysInFileDirectory(path), true));

	test.each([
		'',
		'../x',
		'a/../../b',
		'%2e%2e/x',
		'.%2E/x',
		'a//b',
		'/abs',
		'a?b',
		'a#b',
		'a\\b',
		'a%2fb',
		'a%5cb',
		'a%3fb',
		'a%3Fb',
		'a%23b',
		'a%00',
		'a%zz',
		'a/..;/c',
		'..;jsessionid=1/x',
		'a;b/..;/c',
		'a/%2e%2e;/c',
		'a/.;x/c',
		'a/;x/c',
		'a%252e%252e/b',
		'a/%252e%252e/%252e%252e/x',
		'a/%25/b',
		'a/%2525.pdf',
		// path parameters, which some servers strip
		'documents/file;v=1.pdf',
		// decoded by a proxy into CR/LF, a space, DEL or NEL (a request split behind it), or into `..` plus what
		// a server trims
		'a%0d%0aHost:%20evil/x',
		'a%0aX',
		'a%20HTTP/1.1',
		'a%7f',
		'a%c2%85b',
		'..%20/x',
		'..%09/x',
		'..%c2%a0/x',
		// read as `..` or `/` after Unicode folding (NFKC)
		'\uff0e\uff0e/x',
		'%ef%bc%8e%ef%bc%8e/x',
		'\u2025/x',
		'a\uff0fb',
		'a%ef%bc%8fb',
		// a segment starting with a dot, or trailing dots and spaces a server trims
		'.hidden/x',
		'.. /x',
		'a/... /b',
	])('%j leaves (or may leave) the directory: refused', (path) => assert.equal(staysInFileDirectory(path), false));
});

/**
 * Every reading of `segment` a server or proxy may make: decoded 0–3 times, path parameters stripped or not,
 * each as is, folded (NFKC) and with trailing dots and white space trimmed.
 */
function readings(segment: string): string[] {
	const out: string[] = [];
	let current = segment;
	for (let i = 0; i < 4; i++) {
		for (const r of [current, current.split(';')[0]]) out.push(r, r.normalize('NFKC'), r.replace(/[.\s]+$/u, ''));
		try {
			current = decodeURIComponent(current);
		} catch {
			break;
		}
	}
	return out;
}

test('property: an accepted file_path has no segment that any reading turns into a dot segment, an empty segment, a separator, a space or a control character', () => {
	const piece = fc.constantFrom(
		'.',
		'..',
		'%2e',
		'%2E',
		'%252e',
		';',
		';x=1',
		'/',
		'%2f',
		'%5c',
		'%3f',
		'%23',
		'%25',
		'%20',
		'%09',
		'%0a',
		'%0d',
		'%7f',
		'%c2%85',
		'%ef%bc%8e',
		'\uff0e',
		' ',
		'file_1.pdf',
		'a',
	);
	const path = fc.oneof(
		hostileString(40),
		fc.array(fc.oneof(piece, fc.string({ maxLength: 4 })), { maxLength: 8 }).map((parts) => parts.join('')),
		fc
			.array(
				fc.array(piece, { maxLength: 3 }).map((p) => p.join('')),
				{ maxLength: 5 },
			)
			.map((s) => s.join('/')),
	);
	let accepted = 0;
	fc.assert(
		fc.property(path, (filePath) => {
			if (!staysInFileDirectory(filePath)) return;
			accepted++;
			for (const segment of filePath.split('/'))
				for (const reading of readings(segment)) {
					assert.notEqual(reading, '', `${JSON.stringify(filePath)}: empty segment`);
					assert.notEqual(reading, '.', `${JSON.stringify(filePath)}: dot segment`);
					assert.notEqual(reading, '..', `${JSON.stringify(filePath)}: dot-dot segment`);
					assert.ok(!/[/\\?#]/.test(reading), `${JSON.stringify(filePath)}: separator in ${JSON.stringify(reading)}`);
					assert.ok(
						!/[\s\p{Cc}\p{Cf}]/u.test(reading),
						`${JSON.stringify(filePath)}: space or control character in ${JSON.stringify(reading)}`,
					);
				}
			const directory = new URL('https://api.telegram.org/file/bot1:T/');
			const url = new URL(`${directory.href}${filePath}`);
			assert.equal(url.origin, directory.origin);
			assert.ok(url.pathname.startsWith(directory.pathname));
		}),
		propertyParams('staysInFileDirectory: accepted paths stay under the directory'),
	);
	assert.ok(accepted > 0, 'some paths are accepted');
});
