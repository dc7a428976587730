/**
 * n8n's owner account in the demo (OWNER, scripts/demo/settings.ts): whether DEMO_OWNER_EMAIL /
 * DEMO_OWNER_PASSWORD can be n8n's owner (checked before n8n starts), and the login line the demo prints once
 * the owner is set up, so the editor opens on a login page instead of the owner form.
 */
import { OWNER } from './settings';

/**
 * Why DEMO_OWNER_EMAIL / DEMO_OWNER_PASSWORD cannot be n8n's owner (n8n's rules: an email address; a password of
 * 8 to 64 characters with a digit and an upper-case letter), or undefined when they can (or are unset). The
 * harness publishes the workflows as that owner, so the demo stops before n8n starts rather than after.
 */
export function ownerSettingsProblem(): string | undefined {
	if (process.env.DEMO_OWNER_EMAIL !== undefined && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(OWNER.email))
		return 'DEMO_OWNER_EMAIL is not an email address';
	const password = process.env.DEMO_OWNER_PASSWORD;
	if (
		password !== undefined &&
		!(password.length >= 8 && password.length <= 64 && /\d/.test(password) && /[A-Z]/.test(password))
	)
		return 'DEMO_OWNER_PASSWORD must have 8 to 64 characters, a digit and an upper-case letter (n8n refuses it otherwise)';
	return undefined;
}

/**
 * n8n's owner account, so the first visit to the editor is a login, not the owner form: the harness set OWNER up
 * (or logged in as it) when it published the workflows (`ownerStatus`); otherwise the demo sets it up itself
 * (POST /rest/owner/setup on main). Returns the line to print: the login, or n8n's answer when it refused
 * (the demo goes on: the editor then asks for an owner as usual).
 */
export async function setUpOwner(instance: {
	owner?: typeof OWNER;
	ownerStatus?: 'created' | 'existing';
	setupOwner(o: typeof OWNER): Promise<{ ok: boolean; status: number; body: string }>;
}): Promise<string> {
	try {
		if (!(instance.ownerStatus && instance.owner === OWNER)) {
			const res = await instance.setupOwner(OWNER);
			if (!res.ok)
				return `n8n owner account not set up: POST /rest/owner/setup answered HTTP ${res.status} ${res.body.slice(0, 300)} — the editor asks for an owner on the first visit`;
		}
		const password = process.env.DEMO_OWNER_PASSWORD
			? 'the password in DEMO_OWNER_PASSWORD'
			: `password ${OWNER.password}`;
		return `n8n login (a demo account of this run, n8n's owner): email ${OWNER.email}, ${password}`;
	} catch (error) {
		return `n8n owner account not set up (${error instanceof Error ? error.message : String(error)}) — the editor asks for an owner on the first visit`;
	}
}
