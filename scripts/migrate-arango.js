#!/usr/bin/env node
'use strict';
/**
 * npm run db:migrate:arango — creates the ArangoCAS collections and indexes (db/arango/schema.json).
 * Environment: ARANGO_URL (default http://127.0.0.1:8529), ARANGO_DB (default contracts),
 * ARANGO_USER / ARANGO_PASSWORD or ARANGO_TOKEN. Safe to run again: it only adds what is missing.
 */
const { migrateArango, configFromEnv } = require('./lib/migrate-arango');

const config = configFromEnv();
migrateArango(config)
	.then((report) => {
		console.log(`ArangoDB ${config.url} database ${config.databaseName}:`);
		console.log(`  database created: ${report.created_database}`);
		console.log(`  collections created: ${report.created_collections.join(', ') || '(none, all present)'}`);
		const fresh = report.ensured_indexes.filter((i) => i.isNewlyCreated).map((i) => i.name);
		console.log(`  indexes ensured: ${report.ensured_indexes.length} (new: ${fresh.join(', ') || 'none'})`);
	})
	.catch((error) => {
		console.error(`db:migrate:arango failed: ${error.message}`);
		process.exitCode = 1;
	});
