/**
 * The demo's database: finds PostgreSQL (DATABASE_URL, else 127.0.0.1:5432, else an embedded server), drops and
 * creates DATABASE (DEMO_DATABASE, default contracts_demo), migrates it, seeds the demo tenant, its bot, Alice
 * and the group, and an active embedding model, and prints the vector route the answerer will use.
 */
import { Client } from 'pg';
import { detectVectorRoute } from '../../nodes/KnowledgeBot/actions/vectorRoute';
import { ALICE, BOT_USERNAME, DATABASE, GROUP, SECRET } from './settings';
import { cleanup } from './state';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { resolvePostgres, withDatabase } = require('../lib/postgres');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { migrate } = require('../lib/migrate');

/** The PostgreSQL server the demo found (scripts/lib/postgres.js resolvePostgres). */
export interface DemoServer {
	source: string;
	url: string;
	stop(): Promise<void>;
}

/**
 * Resolves the server, creates, migrates and seeds DATABASE, and prints what it did. Returns the server, the
 * database's URL, an open connection to it (its close is a cleanup step: call `dbClosed()` after closing it
 * yourself). Throws when PostgreSQL cannot be reached or a migration fails.
 */
export async function prepareDatabase(): Promise<{
	server: DemoServer;
	url: string;
	db: Client;
	dbClosed: () => void;
}> {
	const server: DemoServer = await resolvePostgres({ log: console.log });
	if (server.source === 'embedded') cleanup.add('stop the embedded PostgreSQL, remove its folder', () => server.stop());
	console.log(`PostgreSQL: ${server.source}`);
	const admin = new Client({ connectionString: withDatabase(server.url, 'postgres') });
	await admin.connect();
	await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
	await admin.query(`CREATE DATABASE ${DATABASE}`);
	await admin.end();
	const url: string = withDatabase(server.url, DATABASE);
	const { applied, missing } = await migrate(url);
	console.log(`migrated ${DATABASE}: ${applied.join(', ')}`);
	for (const m of missing) console.log(`  not applied here: ${m.reason}`);
	const db = new Client({ connectionString: url });
	await db.connect();
	const dbClosed = cleanup.add('close the demo database connection', () => db.end().catch(() => undefined));
	await seed(db);
	const route = await detectVectorRoute(db);
	console.log(
		`vector route: ${route.route} (${route.table}${route.pgvector_version ? `, pgvector ${route.pgvector_version}` : ', no pgvector'})`,
	);
	return { server, url, db, dbClosed };
}

/** Seeds the demo tenant and its bot, what an admin sets up for the bot to answer, and an active embedding model. */
async function seed(db: Client) {
	await db.query(
		`WITH t AS (INSERT INTO core.tenants (name) VALUES ('Demo tenant') RETURNING tenant_id)
		 INSERT INTO core.bots (tenant_id, bot_key, webhook_secret, username) SELECT tenant_id, 'demo_bot', $1, $2 FROM t`,
		[SECRET, BOT_USERNAME],
	);
	// what an admin sets up for the bot to answer: Alice may ask, the group is registered, an embedding model is active
	await db.query(
		`WITH t AS (SELECT tenant_id FROM core.tenants WHERE name = 'Demo tenant'), u AS (INSERT INTO core.tenant_users (tenant_id, tg_user_id, role) SELECT tenant_id, $1, 'user' FROM t)
		 INSERT INTO core.tenant_chats (tenant_id, chat_id, chat_type, title) SELECT tenant_id, $2, $3, $4 FROM t`,
		[ALICE.id, GROUP.id, GROUP.type, GROUP.title],
	);
	await db.query(
		"INSERT INTO kg.embedding_models (provider, name, dims) VALUES ('gemini', 'gemini-embedding-001', 1536)",
	);
}
