/**
 * The latest migration defining raw.ingest_update (014, replaced by 015) runs nodes/shared/statements/telegramRaw.ts's INGEST_UPDATE and
 * FIND_DUPLICATE: the migration must hold both texts verbatim, so the documented statements are the ones
 * that run (a change to either needs a new migration, and this test says so).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from '@jest/globals';
import { FIND_DUPLICATE, INGEST_UPDATE, LOCK_UPDATE } from '../../nodes/shared/statements/telegramRaw';

const MIGRATIONS = path.join(__dirname, '..', '..', 'db', 'migrations');
/** The text of the last migration (by file name) that defines raw.ingest_update: the one that is in force. */
const latest = fs
	.readdirSync(MIGRATIONS)
	.filter((f) => f.endsWith('.sql'))
	.sort()
	.filter((f) => /FUNCTION raw\.ingest_update\(/.test(fs.readFileSync(path.join(MIGRATIONS, f), 'utf8')))
	.pop()!;
const migration = fs.readFileSync(path.join(MIGRATIONS, latest), 'utf8');

test('raw.ingest_update holds INGEST_UPDATE and FIND_DUPLICATE verbatim, in that order, after the lock', () => {
	const lock = migration.indexOf("pg_advisory_xact_lock(hashtextextended($1::text || ':' || $3::text, 0))");
	const ingest = migration.indexOf(`RETURN QUERY${INGEST_UPDATE};`);
	const find = migration.indexOf(`RETURN QUERY${FIND_DUPLICATE};`);
	assert.ok(lock > 0, 'the advisory lock is taken first');
	assert.ok(
		ingest > lock,
		'INGEST_UPDATE, verbatim, after the lock (changed in telegramRaw.ts? write a new migration)',
	);
	assert.ok(
		find > ingest,
		'FIND_DUPLICATE, verbatim, after INGEST_UPDATE (changed in telegramRaw.ts? write a new migration)',
	);
});

test('the function locks the same key as LOCK_UPDATE (which the quarantine path takes)', () => {
	// LOCK_UPDATE's $1 bot_id, $2 update_id are the function's $1 and $3
	assert.ok(migration.includes(LOCK_UPDATE.replace('SELECT ', '').replace('$2::text', '$3::text')));
});
