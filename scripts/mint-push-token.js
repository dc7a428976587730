#!/usr/bin/env node
'use strict';
/**
 * Mints a Pipeline Push token (seed 001 §3 step 4, variant B; docs/nodes/pipeline-push.md) and prints it on
 * stdout: "v2." + exp + "." + base64url(HMAC-SHA256(secret, "contracts-push:v2:" + exp + ":" + user_id)), exp
 * being the expiry in Unix seconds; the same formula as nodes/PipelinePush/transport/token.ts mintPushToken
 * (test/unit/pipelinePush.token.test.ts checks both agree).
 *
 * Usage:
 *   node scripts/mint-push-token.js --user alice [--secret-file FILE] [--expires-in 1h]
 *   PUSH_SECRET=... node scripts/mint-push-token.js --user alice
 *
 *   --user         the user_id the client subscribes as (its runs only); required
 *   --secret-file  a file holding the Contracts Push API credential's Token Secret (trailing newline trimmed);
 *                  else env PUSH_SECRET. At least 32 characters.
 *   --expires-in   the token's lifetime: seconds ("3600") or a span ("90s", "15m", "1h", "2d"); default 1h,
 *                  at most 7d. The node refuses a token living longer than its Max Token Lifetime (default 1 day).
 *
 * Exit codes: 0 printed, 2 usage error (message on stderr). The secret is never printed.
 */
const fs = require('node:fs');
const { createHmac } = require('node:crypto');

const PREFIX = 'contracts-push:v2:';
const MIN_SECRET = 32;
const MAX_LIFETIME = 7 * 86400;
const UNIT = { s: 1, m: 60, h: 3600, d: 86400 };

function usage(message) {
	process.stderr.write(
		`mint-push-token: ${message}\nusage: node scripts/mint-push-token.js --user <user_id> [--secret-file <file> | env PUSH_SECRET] [--expires-in 1h]\n`,
	);
	process.exit(2);
}

function main() {
	const argv = process.argv.slice(2);
	let user;
	let secretFile;
	let expiresIn = '1h';
	for (let i = 0; i < argv.length; i++) {
		const arg = argv[i];
		const value = () => {
			if (i + 1 >= argv.length) usage(`${arg} needs a value`);
			return argv[++i];
		};
		if (arg === '--user') user = value();
		else if (arg === '--secret-file') secretFile = value();
		else if (arg === '--expires-in') expiresIn = value();
		else if (arg === '--help' || arg === '-h') usage('help');
		else usage(`unknown argument "${arg}"`);
	}
	if (!user) usage('--user is required');
	if (user !== user.trim()) usage('--user has leading or trailing white space');
	if (user.length > 256) usage('--user is longer than 256 characters');
	// eslint-disable-next-line no-control-regex
	if (/[\u0000-\u001f\u007f]/.test(user)) usage('--user contains a control character');
	const span = /^([1-9][0-9]{0,9})([smhd]?)$/.exec(expiresIn);
	if (!span) usage('--expires-in wants seconds or a span such as 15m, 1h, 2d');
	const lifetime = Number(span[1]) * UNIT[span[2] || 's'];
	if (lifetime > MAX_LIFETIME) usage('--expires-in is longer than 7d');
	let secret;
	if (secretFile) {
		try {
			secret = fs.readFileSync(secretFile, 'utf8').replace(/\r?\n$/, '');
		} catch (error) {
			usage(`cannot read --secret-file (${error.code || 'error'})`);
		}
	} else secret = process.env.PUSH_SECRET;
	if (!secret) usage('no secret: pass --secret-file or set PUSH_SECRET');
	if (secret.length < MIN_SECRET) usage(`the secret must be at least ${MIN_SECRET} characters`);
	const exp = Math.floor(Date.now() / 1000) + lifetime;
	const mac = createHmac('sha256', secret).update(`${PREFIX}${exp}:${user}`, 'utf8').digest('base64url');
	process.stdout.write(`v2.${exp}.${mac}\n`);
}

main();
