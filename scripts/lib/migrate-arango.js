'use strict';
/**
 * Applies db/arango/schema.json to an ArangoDB database, idempotently: creates the database when it is
 * missing (needs access to _system), every missing document or edge collection, and ensures every index.
 * Returns what it did: { created_database, created_collections, ensured_indexes: [{ collection, name, isNewlyCreated }] }.
 */
const path = require('node:path');
const fs = require('node:fs');
const { Database } = require('arangojs');

const SCHEMA_FILE = path.join(__dirname, '..', '..', 'db', 'arango', 'schema.json');
/** ArangoDB collection type numbers: 2 document, 3 edge. */
const EDGE_TYPE = 3;

function loadSchema(file = SCHEMA_FILE) {
	return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** Connection settings from the environment: ARANGO_URL, ARANGO_DB, ARANGO_USER, ARANGO_PASSWORD / ARANGO_TOKEN. */
function configFromEnv(env = process.env) {
	const auth = env.ARANGO_TOKEN
		? { token: env.ARANGO_TOKEN }
		: { username: env.ARANGO_USER || 'root', password: env.ARANGO_PASSWORD || '' };
	return {
		url: env.ARANGO_URL || 'http://127.0.0.1:8529',
		databaseName: env.ARANGO_DB || 'contracts',
		auth,
		maxRetries: false,
	};
}

async function migrateArango(config, schema = loadSchema()) {
	const report = { created_database: false, created_collections: [], ensured_indexes: [] };
	const system = new Database({ ...config, databaseName: '_system' });
	let db = new Database(config);
	try {
		if (config.databaseName && config.databaseName !== '_system') {
			const names = await system.listUserDatabases().catch(() => null);
			if (names && !names.includes(config.databaseName)) {
				db = await system.createDatabase(config.databaseName);
				report.created_database = true;
			}
		}
		const existing = new Map((await db.listCollections()).map((c) => [c.name, c.type]));
		const wanted = [
			...schema.documents.map((name) => ({ name, edge: false })),
			...schema.edges.map((name) => ({ name, edge: true })),
		];
		for (const { name, edge } of wanted) {
			if (existing.has(name)) {
				if ((existing.get(name) === EDGE_TYPE) !== edge) {
					throw new Error(
						`collection ${name} exists as a ${edge ? 'document' : 'edge'} collection; expected ${edge ? 'edge' : 'document'}`,
					);
				}
				continue;
			}
			if (edge) await db.createEdgeCollection(name);
			else await db.createCollection(name);
			report.created_collections.push(name);
		}
		for (const index of schema.indexes) {
			const { collection, $comment, ...options } = index;
			void $comment;
			const result = await db.collection(collection).ensureIndex(options);
			report.ensured_indexes.push({ collection, name: index.name, isNewlyCreated: Boolean(result.isNewlyCreated) });
		}
		return report;
	} finally {
		system.close();
		db.close();
	}
}

module.exports = { migrateArango, loadSchema, configFromEnv, SCHEMA_FILE };
