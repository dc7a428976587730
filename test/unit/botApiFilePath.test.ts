/**
 * staysInFileDirectory (nodes/KnowledgeBot/transport/botApi.ts, issue 25 §1): the check on a getFile
 * `file_path` before File → Download requests `<base>/file/bot<token>/<file_path>`. A table of paths that
 * would leave the directory once a server (or a proxy in front of it) reads them — dot segments, also
 * percent-encoded, double-encoded or with path parameters (`..;`) — and a property over arbitrary text: a
 * path it accepts stays under the directory however often it is percent-decoded and whatever path
 * parameters a server strips.
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
		'documents/file;v=1.pdf',
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
	])('%j leaves (or may leave) the directory: refused', (path) => assert.equal(staysInFileDirectory(path), false));
});

/** Every reading of `segment` a server or proxy may make: decoded 0–3 times, path parameters stripped or not. */
function readings(segment: string): string[] {
	const out: string[] = [];
	let current = segment;
	for (let i = 0; i < 4; i++) {
		out.push(current, current.split(';')[0]);
		try {
			current = decodeURIComponent(current);
		} catch {
			break;
		}
	}
	return out;
}

test('property: an accepted file_path has no segment that any reading turns into a dot segment, an empty segment or a separator', () => {
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
