/**
 * Stores a downloaded body for a document (WF31 URL fetch, WF32 Telegram file), inside the caller's
 * transaction: the bytes once per SHA-256 in content.blob_objects, and the document of this source in
 * this chat (content.documents, unique tenant/doc_type/source_key/chat) pointed at the blob — set back
 * to `pending` only when the blob changed. Returns the document's id and status ("pending" means: extract it).
 */
import crypto from 'node:crypto';
import type { PoolClient } from 'pg';
import type { SourceCtx } from '../../shared/contracts/sourceCtx';
import { STORE_BODY } from '../../shared/statements/content';

export interface StoredBody {
	sha256: string;
	blob_object_id: number;
	document_id: number;
	status: 'pending' | 'done' | 'error';
}

export async function storeBody(
	client: PoolClient,
	source: {
		tenant_id: string;
		doc_type: 'url' | 'file';
		source_key: string;
		url_id?: number | null;
		file_unique_id?: string | null;
		ctx: SourceCtx;
	},
	body: Buffer,
	mime: string | null,
): Promise<StoredBody> {
	const sha256 = crypto.createHash('sha256').update(body).digest('hex');
	const c = source.ctx;
	const { rows } = await client.query(STORE_BODY, [
		source.tenant_id,
		source.doc_type,
		source.source_key,
		source.url_id ?? null,
		source.file_unique_id ?? null,
		sha256,
		body,
		mime,
		c.chat_id,
		c.visibility,
		c.dm_owner_user_id,
		c.message_version_id,
	]);
	return {
		sha256,
		blob_object_id: Number(rows[0].blob_object_id),
		document_id: Number(rows[0].document_id),
		status: rows[0].status,
	};
}
