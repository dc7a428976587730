#!/usr/bin/env node
'use strict';
/**
 * `npm run db:migrate`: applies db/migrations to DATABASE_URL (default: postgres://postgres@127.0.0.1:5432/postgres).
 * Prints each applied migration and the vector store the Knowledge Bot will use; exits 1 with the failing file named when one fails.
 */
const { migrate, describeVectorStore } = require('./lib/migrate');

const url = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
migrate(url, { log: (m) => console.log(m) })
	.then(({ applied, skipped, missing, vector_store: store }) => {
		console.log(
			`migrations: ${applied.length} applied, ${skipped.length} already applied, ${missing.length} not applicable here`,
		);
		for (const m of missing) console.log(`  NOT APPLIED ${m.file}: ${m.reason}`);
		console.log(`vector store: ${describeVectorStore(store)}`);
	})
	.catch((error) => {
		console.error(error.message);
		process.exit(1);
	});
