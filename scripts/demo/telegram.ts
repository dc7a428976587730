/**
 * The Telegram scenario of the demo: the updates it posts to WF10's webhook (a message linking two pages, a
 * document, a photo in a DM, an edit, a channel post, my_chat_member, Alice joining the group, a duplicate, a
 * wrong secret, a malformed body, a poison update with a NUL that is quarantined), each answer printed, then the
 * wait while WF90 runs the jobs they created.
 */
import type { Client } from 'pg';
import { JOB_STATUS, JOB_TYPES } from '../../nodes/shared/jobs';
import type { BotApiStandIn } from '../../test/helpers/botApiStandIn';
import { pdfWithText } from '../../test/helpers/documents';
import { messageWithLinks } from '../../test/helpers/pageServer';
import {
	channelPost,
	documentMessage,
	editedMessage,
	myChatMember,
	newUpdateId,
	photoWithCaption,
	textWithUrls,
} from '../../test/helpers/updates';
import { ALICE, GROUP, SECRET } from './settings';

/**
 * Posts the scenario's updates to `hook` (WF10's webhook; the document and the photo are served by the Bot API
 * stand-in `botApi`, the linked pages by the page server at `pagesBase`) and prints each HTTP answer.
 */
export async function postUpdates(hook: string, pagesBase: string, botApi: BotApiStandIn) {
	const text = messageWithLinks(pagesBase);
	const doc = documentMessage();
	botApi.files.set(doc.message.document.file_id, {
		path: 'documents/notes.pdf',
		body: pdfWithText('Meeting notes on vector indexes'),
		type: 'application/pdf',
	});
	// offline: the photo's caption and the edit link to local pages only; the photo is served by the stand-in
	const photo = photoWithCaption();
	photo.message.caption = 'whiteboard photo';
	photo.message.caption_entities = [];
	botApi.files.set(photo.message.photo[1].file_id, {
		path: 'photos/whiteboard.jpg',
		body: Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
		type: 'image/jpeg',
	});
	const edit = editedMessage();
	edit.edited_message.entities = [{ type: 'text_link', offset: 4, length: 8, url: `${pagesBase}/article` }];
	// an update PostgreSQL cannot store (jsonb refuses U+0000): kept byte for byte in raw.telegram_quarantine, answered 200
	const poison = textWithUrls();
	poison.message.text = 'null byte \u0000 here';
	const sends: Array<[string, unknown, string | null]> = [
		['message linking two pages', text, SECRET],
		['PDF document', doc, SECRET],
		['photo in a DM', photo, SECRET],
		['edited message with a link', edit, SECRET],
		['channel post', channelPost(), SECRET],
		['my_chat_member', myChatMember(), SECRET],
		['chat_member: Alice joins', aliceJoins(), SECRET],
		['duplicate of the first', text, SECRET],
		['wrong secret', textWithUrls(), 'not-the-secret'],
		['malformed body', { update_id: 'x', message: {} }, SECRET],
		['poison: NUL in a text', poison, SECRET],
		['the poison again', poison, SECRET],
	];
	for (const [label, body, secret] of sends) {
		const res = await fetch(hook, {
			method: 'POST',
			headers: { 'content-type': 'application/json', ...(secret ? { 'X-Telegram-Bot-Api-Secret-Token': secret } : {}) },
			body: JSON.stringify(body),
		});
		console.log(`${label.padEnd(30)} → HTTP ${res.status} ${await res.text()}`);
	}
}

/** Waits (up to 150 s, polling every 2 s) until no job but qa_answer is queued or running in ops.jobs. */
export async function waitForJobs(db: Client) {
	console.log('\nWF90 (every 10 s) runs the jobs: WF20 → WF30 → WF31 / WF32 → WF33 → WF40 → WF41 …');
	const deadline = Date.now() + 150_000;
	while (Date.now() < deadline) {
		const { rows } = await db.query(
			'SELECT count(*)::int AS open FROM ops.jobs WHERE status IN ($1, $2) AND job_type <> $3',
			[JOB_STATUS.queued, JOB_STATUS.running, JOB_TYPES.qa_answer],
		);
		if (rows[0].open === 0) break;
		await new Promise((r) => setTimeout(r, 2000));
	}
}

/** Alice joins the group (a chat_member update): WF20 records her membership, which lets her ask about its documents. */
export function aliceJoins() {
	return {
		update_id: newUpdateId(),
		chat_member: {
			chat: GROUP,
			from: ALICE,
			date: 1_763_800_050,
			old_chat_member: { user: ALICE, status: 'left' },
			new_chat_member: { user: ALICE, status: 'member' },
		},
	};
}
