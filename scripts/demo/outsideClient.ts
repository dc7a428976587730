/**
 * How an outside client calls the demo's run (issue 27 §3): the files in n8n's user folder (mode 0600, removed
 * when the demo ends) that hold this run's JWT secret, a JWT, a push token and the metrics scrape token, and the
 * lines the demo prints about them (paths and curl examples, never the secrets themselves).
 */
import fs from 'node:fs';
import path from 'node:path';
import { mintPushToken } from '../../nodes/PipelinePush/transport/token';
import { mint } from '../../test/helpers/jwt';
import { JWT_SECRET, PUSH_SECRET, SCRAPE_TOKEN } from './settings';

/**
 * Writes this run's JWT Auth secret (M00/M01's webhooks) into `<folder>/demo-jwt-secret` (mode 0600; the user
 * folder and the file are removed when the demo ends) so a user can mint tokens for their own calls
 * (docs/webhook-authentication.md: the copy-paste example). Returns the line to print: the path, never the secret.
 */
export function demoJwtSecretFile(folder: string): string {
	const file = path.join(folder, 'demo-jwt-secret');
	fs.writeFileSync(file, `${JWT_SECRET}\n`, { mode: 0o600 });
	return `JWT secret of the query API (for your own calls, removed when the demo ends): ${file}\n  TOKEN=$(node scripts/mint-token.js --secret-file ${file} --sub demo-user --expires-in 1h)  (docs/webhook-authentication.md)`;
}

/**
 * Prints how an outside client calls this run: for each of the JWT (M00/M01's webhooks), the push token (M17) and
 * the metrics scrape token (M18), the file it was written to (mode 0600, in n8n's user folder, removed when the
 * demo ends) and a curl (or node) example that reads it. The tokens themselves are never printed (the demo's
 * output is kept in CI logs); the JWT and push token are for user demo-user and valid 1 h.
 */
export function printOutsideClient(n8nUrl: string, pushPort: number, metrics: boolean, folder: string) {
	const write = (name: string, value: string) => {
		const file = path.join(folder, name);
		fs.writeFileSync(file, `${value}\n`, { mode: 0o600 });
		return file;
	};
	const jwt = write('demo-client-jwt', mint('demo-user', { secret: JWT_SECRET, expiresIn: '1h' }));
	const push = write('demo-client-push-token', mintPushToken('demo-user', PUSH_SECRET, { expiresInSeconds: 3600 }));
	const scrape = write('demo-client-scrape-token', SCRAPE_TOKEN);
	const ws = `ws://127.0.0.1:${pushPort}/api/ws`;
	console.log(
		[
			'\nCall this run from outside (tokens of this run in files, mode 0600, removed when the demo ends; user demo-user, valid 1 h):',
			`  JWT (webhook auth of M00/M01; mint more: node scripts/mint-token.js --secret-file ${folder}/demo-jwt-secret --sub demo-user):`,
			`    JWT=$(cat ${jwt})`,
			`    curl -s -X POST ${n8nUrl}/webhook/api/query -H "Authorization: Bearer $JWT" -H 'content-type: application/json' -d '{"query":"What is compare-and-swap?"}'`,
			`    curl -s "${n8nUrl}/webhook/api/query/status?id=<request_id>" -H "Authorization: Bearer $JWT"`,
			'  push token (M17 Pipeline Push; node scripts/mint-push-token.js mints more from the push secret):',
			`    PUSH_TOKEN=$(cat ${push})`,
			`    curl -si --max-time 3 --http1.1 -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: ZGVtby1jbGllbnQtMDAwMQ==' http://127.0.0.1:${pushPort}/api/ws | head -1   # HTTP/1.1 101 Switching Protocols`,
			`    node -e "const w=new (require('ws'))('${ws}');w.on('open',()=>w.send(JSON.stringify({type:'auth',user_id:'demo-user',token:process.argv[1]})));w.on('message',(m)=>console.log(String(m)))" "$PUSH_TOKEN"   # from this folder (the ws package); then send {"type":"subscribe","request_ids":["<request_id>"]}`,
			`  metrics scrape token (M18${metrics ? '' : ', not in this checkout'}):`,
			`    SCRAPE_TOKEN=$(cat ${scrape})`,
			`    curl -s ${n8nUrl}/webhook/metrics -H "Authorization: Bearer $SCRAPE_TOKEN" | grep contracts_pipeline`,
		].join('\n'),
	);
}
