/**
 * A Bot API server in --local mode answers getFile with an absolute file_path that holds the bot token
 * (`/var/lib/telegram-bot-api/<token>/documents/file_0.pdf`): File → Download refuses it with a clear,
 * non-retryable error, and the token reaches neither the error nor tg.file_instances.tg_file_path.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, test } from '@jest/globals';
import { downloadOperation } from '../../nodes/KnowledgeBot/actions/file/download.operation';
import { startBotApi, type BotApiStandIn } from '../helpers/botApiStandIn';
import { seedBot, setupDatabase, type TestDatabase } from '../helpers/db';
import { knowledgeRunner } from '../helpers/knowledgeOps';
import { pdfWithText } from '../helpers/documents';

let db: TestDatabase;
let tenant: string;
let botApi: BotApiStandIn;

beforeAll(async () => {
	db = await setupDatabase();
	tenant = (await seedBot(db.pool)).tenantId;
	botApi = await startBotApi('987654321:AAlocalModeToken_x9');
});
afterAll(async () => {
	await botApi.close();
	await db.drop();
});

test('File → Download: a local-mode absolute file_path is refused (502, not retryable, no token) and never stored', async () => {
	const runner = knowledgeRunner(() => db.pool, '1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5', {
		telegram: () => ({ accessToken: botApi.token, baseUrl: botApi.baseUrl }),
	});
	const uniqueId = 'AgADlocal';
	const fileId = `BQAC-${uniqueId}`;
	botApi.files.set(fileId, {
		path: `/var/lib/telegram-bot-api/${botApi.token}/documents/file_0.pdf`,
		body: pdfWithText('local'),
		type: 'application/pdf',
	});
	await db.pool.query(
		'INSERT INTO tg.files (tenant_id, file_unique_id, file_name, mime_type, file_size) VALUES ($1, $2, $3, $4, $5)',
		[tenant, uniqueId, 'a.pdf', 'application/pdf', 10],
	);
	await db.pool.query('INSERT INTO tg.file_instances (tenant_id, file_unique_id, file_id) VALUES ($1, $2, $3)', [
		tenant,
		uniqueId,
		fileId,
	]);
	const req = {
		tenant_id: tenant,
		file_id: fileId,
		file_unique_id: uniqueId,
		ctx: { chat_id: -100555, visibility: 'group', dm_owner_user_id: null, message_version_id: null },
	};
	let error: Awaited<ReturnType<typeof runner.failure>> | null = null;
	try {
		error = await runner.failure(downloadOperation, req);
	} finally {
		const row = await db.pool.query('SELECT tg_file_path FROM tg.file_instances WHERE file_id = $1', [fileId]);
		assert.ok(
			!JSON.stringify(row.rows).includes(botApi.token.split(':')[1]),
			`the token was stored: ${JSON.stringify(row.rows)}`,
		);
	}
	assert.deepEqual([error.statusCode, error.retryable, error.details.code], [502, false, 'LOCAL_MODE_FILE_PATH']);
	assert.match(error.message, /--local/);
	assert.ok(!`${error.message} ${error.stack} ${JSON.stringify(error.details)}`.includes(botApi.token.split(':')[1]));
	assert.deepEqual(
		botApi.requests.filter((r) => r.startsWith('/file/')),
		[],
		'no download was attempted',
	);
});
