#!/usr/bin/env node
'use strict';
/**
 * Mints an HS256 JWT for the shipped webhooks (A31–A37, M00, M01: Webhook Authentication = JWT Auth,
 * credential "Contracts Webhook JWT", key type Passphrase, algorithm HS256) and prints it on stdout.
 *
 * Usage:
 *   node scripts/mint-token.js --sub alice [--secret-file FILE] [--expires-in 1h] [--claim key=value]...
 *   JWT_SECRET=... node scripts/mint-token.js --sub alice
 *
 *   --sub          the user id the workflows act as (the contract nodes read the `sub` claim); required
 *   --secret-file  a file holding the credential's secret (trailing newline trimmed); else env JWT_SECRET
 *   --expires-in   jsonwebtoken's form: seconds ("3600") or a span ("15m", "1h", "7d"); default 1h
 *   --claim        an extra claim, e.g. --claim tenant_id=t1 (repeatable; values are strings)
 *
 * Then: curl -H "Authorization: Bearer $(node scripts/mint-token.js --sub alice)" …/webhook/api/query
 * Exit codes: 0 printed, 2 usage error (message on stderr). The secret is never printed.
 */
const fs = require('node:fs');
const jwt = require('jsonwebtoken');

function usage(message) {
	process.stderr.write(
		`mint-token: ${message}\nusage: node scripts/mint-token.js --sub <user> [--secret-file <file> | env JWT_SECRET] [--expires-in 1h] [--claim k=v]\n`,
	);
	process.exit(2);
}

function parse(argv) {
	const out = { claims: {}, expiresIn: '1h' };
	for (let i = 0; i < argv.length; i++) {
		const arg = argv[i];
		const value = () => {
			if (i + 1 >= argv.length) usage(`${arg} needs a value`);
			return argv[++i];
		};
		if (arg === '--sub') out.sub = value();
		else if (arg === '--secret-file') out.secretFile = value();
		else if (arg === '--expires-in') out.expiresIn = value();
		else if (arg === '--claim') {
			const kv = value();
			const eq = kv.indexOf('=');
			if (eq <= 0) usage(`--claim wants key=value, got "${kv}"`);
			out.claims[kv.slice(0, eq)] = kv.slice(eq + 1);
		} else if (arg === '--help' || arg === '-h') usage('help');
		else usage(`unknown argument "${arg}"`);
	}
	return out;
}

function main() {
	const args = parse(process.argv.slice(2));
	if (!args.sub) usage('--sub is required');
	// The contract nodes refuse a claim with leading or trailing white space (403 IDENTITY_CLAIM_INVALID).
	if (args.sub !== args.sub.trim()) usage('--sub has leading or trailing white space');
	let secret;
	if (args.secretFile) {
		try {
			secret = fs.readFileSync(args.secretFile, 'utf8').replace(/\r?\n$/, '');
		} catch (error) {
			usage(`cannot read --secret-file (${error.code || 'error'})`);
		}
	} else secret = process.env.JWT_SECRET;
	if (!secret) usage('no secret: pass --secret-file or set JWT_SECRET');
	const expiresIn = /^\d+$/.test(args.expiresIn) ? Number(args.expiresIn) : args.expiresIn;
	let token;
	try {
		token = jwt.sign({ ...args.claims, sub: args.sub }, secret, { algorithm: 'HS256', expiresIn });
	} catch (error) {
		// jsonwebtoken's messages name the bad option (e.g. expiresIn), never the secret.
		usage(error.message);
	}
	process.stdout.write(`${token}\n`);
}

main();
