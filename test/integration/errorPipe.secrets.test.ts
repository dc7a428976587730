/**
 * The Error Pipe redacts at its own boundary (review of issue 10 item 5): a remembered secret anywhere in
 * an item (error.message, another field, a long message cut by the sanitiser) and the values of secret
 * headers (authorization, x-telegram-bot-api-secret-token, cookie, x-api-key, x-goog-api-key) never reach
 * the envelope nor the ops.errors row.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, test } from '@jest/globals';
import { normalizeErrorItem } from '../../nodes/ErrorPipe/actions/normalize';
import { recordError } from '../../nodes/ErrorPipe/actions/record';
import { rememberSecrets } from '../../nodes/shared/redact';
import { setupDatabase, type TestDatabase } from '../helpers/db';

let db: TestDatabase;
beforeAll(async () => {
	db = await setupDatabase();
});
afterAll(async () => {
	await db?.drop();
});

test('remembered secrets and secret headers never reach the envelope or ops.errors', async () => {
	const token = `123456789:AA${randomBytes(20).toString('base64url')}`;
	const webhook = `whs_${randomBytes(12).toString('hex')}-A`;
	const unremembered = {
		bearer: `Bearer ${randomBytes(16).toString('hex')}`,
		cookie: `sid=${randomBytes(16).toString('hex')}`,
		apiKey: `k-${randomBytes(16).toString('hex')}`,
		goog: `AIza${randomBytes(16).toString('hex')}`,
	};
	rememberSecrets([token, webhook]);
	const item = {
		error: {
			message: `Telegram said: https://api.telegram.org/bot${token}/getMe failed ${'x'.repeat(20_000)} ${token}`,
			node_type: 'n8n-nodes-base.httpRequest',
		},
		unrelated: { note: `webhook ${webhook}`, deep: [{ url: `/bot${encodeURIComponent(token)}/x` }] },
		headers: {
			'X-Telegram-Bot-Api-Secret-Token': `other-${randomBytes(8).toString('hex')}`,
			Authorization: unremembered.bearer,
			cookie: unremembered.cookie,
			'x-api-key': unremembered.apiKey,
			'x-goog-api-key': unremembered.goog,
		},
		ctx: { correlation_id: '1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5', headers: { authorization: unremembered.bearer } },
	};
	const { envelope, jobId, contractVersion } = normalizeErrorItem(item, { source: 'WF99' });
	await recordError(db.pool, envelope, jobId, contractVersion);
	const rows = await db.pool.query(
		"SELECT to_jsonb(e)::text AS row FROM ops.errors e WHERE correlation_id = '1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5'",
	);
	assert.equal(rows.rows.length, 1);
	const secrets = [
		token,
		token.split(':')[1].slice(0, 16),
		webhook,
		item.headers['X-Telegram-Bot-Api-Secret-Token'],
		...Object.values(unremembered).map((v) => v.split(/[ =]/)[1] ?? v),
	];
	for (const [what, text] of [
		['envelope', JSON.stringify(envelope)],
		['ops.errors row', rows.rows[0].row],
	] as const) {
		for (const s of secrets)
			assert.ok(!text.toLowerCase().includes(s.toLowerCase()), `${what} holds ${s.slice(0, 6)}…`);
		assert.match(text, /\[REDACTED\]/, what);
	}
	assert.match(envelope.error.message, /^Telegram said: https:\/\/api\.telegram\.org\/bot\[REDACTED\]\/getMe failed/);
});
