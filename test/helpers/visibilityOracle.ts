/**
 * Who may read which chunk, computed in the test from the facts it set up — never by the product's ACL SQL
 * (visibleTo in nodes/shared/statements/content.ts) nor its Context Loader — so an e2e test can check WF51's
 * answers and audit.qa_citations against it. Rules (seed 003 §0.2 and WF00c):
 *  - the asker must be a user of the tenant (core.tenant_users), not blocked, else the question is refused;
 *  - membership is Telegram's: creator / administrator / member are members, left / kicked are not, and a
 *    `restricted` user is a member only when Telegram's ChatMemberRestricted says `is_member: true`;
 *  - asked in a `group` (registered for the tenant): refused unless the asker is a member or a tenant admin;
 *    visible are that group's `group` chunks only (the whole group reads the reply);
 *  - asked in the asker's own `dm`: an admin sees every chunk of the tenant, anyone else their own `dm`
 *    chunks and the `group` chunks of the chats they are a member of.
 * Ids are kept as decimal strings (Telegram ids may pass 2^53).
 */

export type Role = 'admin' | 'user' | 'blocked';

export interface ChunkFact {
	chunk_id: number;
	tenant: string;
	chat: string;
	visibility: 'group' | 'dm';
	/** the dm's owner (tg_user_id), null for a group chunk */
	owner: string | null;
}

export interface AskFacts {
	tenant: string;
	user: string;
	channel: 'group' | 'dm';
	chat: string;
}

export type Outcome =
	| { refused: 'NOT_ALLOWED' | 'BLOCKED' | 'CHAT_NOT_REGISTERED' | 'NOT_A_MEMBER' | 'DM_NOT_OWN_CHAT' }
	| { visible: number[] };

const MEMBER_STATUSES = new Set(['creator', 'administrator', 'member']);

export class VisibilityOracle {
	private readonly roles = new Map<string, Role>();
	private readonly members = new Map<string, boolean>();
	private readonly chats = new Set<string>();
	readonly chunks: ChunkFact[] = [];

	setRole(tenant: string, user: number | string, role: Role): void {
		this.roles.set(`${tenant}/${user}`, role);
	}

	registerChat(tenant: string, chat: number | string): void {
		this.chats.add(`${tenant}/${chat}`);
	}

	addChunk(chunk: Omit<ChunkFact, 'chat' | 'owner'> & { chat: number | string; owner: number | string | null }): void {
		this.chunks.push({ ...chunk, chat: String(chunk.chat), owner: chunk.owner === null ? null : String(chunk.owner) });
	}

	/** A ChatMember change as Telegram reports it (new_chat_member.status and, for restricted, is_member). */
	applyStatus(tenant: string, chat: number | string, user: number | string, status: string, isMember?: boolean): void {
		this.members.set(
			`${tenant}/${chat}/${user}`,
			MEMBER_STATUSES.has(status) || (status === 'restricted' && isMember === true),
		);
	}

	isMember(tenant: string, chat: number | string, user: number | string): boolean {
		return this.members.get(`${tenant}/${chat}/${user}`) ?? false;
	}

	/** What a question asked now gets: refused (no answer at all), or the ids of every chunk it may cite, ascending. */
	outcome(ask: AskFacts): Outcome {
		const role = this.roles.get(`${ask.tenant}/${ask.user}`);
		if (role === undefined) return { refused: 'NOT_ALLOWED' };
		if (role === 'blocked') return { refused: 'BLOCKED' };
		const admin = role === 'admin';
		if (ask.channel === 'dm' && ask.chat !== ask.user) return { refused: 'DM_NOT_OWN_CHAT' };
		if (ask.channel === 'group') {
			if (!this.chats.has(`${ask.tenant}/${ask.chat}`)) return { refused: 'CHAT_NOT_REGISTERED' };
			if (!admin && !this.isMember(ask.tenant, ask.chat, ask.user)) return { refused: 'NOT_A_MEMBER' };
		}
		const visible = this.chunks.filter((c) => {
			if (c.tenant !== ask.tenant) return false;
			if (ask.channel === 'group') return c.visibility === 'group' && c.chat === ask.chat;
			if (admin) return true;
			if (c.visibility === 'dm') return c.owner === ask.user;
			return this.isMember(ask.tenant, c.chat, ask.user);
		});
		return { visible: visible.map((c) => c.chunk_id).sort((a, b) => a - b) };
	}
}
