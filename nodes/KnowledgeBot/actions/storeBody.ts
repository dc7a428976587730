/**
 * Stores a downloaded body for a document (WF31 URL fetch, WF32 Telegram file), inside the caller's
 * transaction: the bytes once per SHA-256 in content.blob_objects, and the document of this source in
 * this chat (content.documents, unique tenant/doc_type/source_key/chat) pointed at the blob — set back
 * to `pending` only when the blob changed. Returns the document's id and status ("pending" means: extract it).
 */
import crypto from 'node:crypto';
import type { PoolClient } from 'pg';
import type { SourceCtx } from '../../shared/contracts/sourceCtx';

/**
 * $1 tenant_id, $2 doc_type, $3 source_key, $4 url_id, $5 file_unique_id, $6 sha256, $7 bytes, $8 mime,
 * $9 chat_id, $10 visibility, $11 dm_owner_user_id, $12 message_version_id.
 */
const STORE_BODY = `
WITH new_blob AS (
  INSERT INTO content.blob_objects (sha256, size_bytes, mime_type, bytes) VALUES ($6, octet_length($7::bytea), $8, $7)
  ON CONFLICT (sha256) DO NOTHING RETURNING id
), blob AS (
  SELECT id FROM new_blob UNION ALL SELECT id FROM content.blob_objects WHERE sha256 = $6 AND NOT EXISTS (SELECT 1 FROM new_blob)
), doc AS (
  INSERT INTO content.documents AS d (tenant_id, doc_type, source_key, url_id, file_unique_id, chat_id, visibility, dm_owner_user_id, message_version_id, blob_object_id, mime_type)
  SELECT $1, $2, $3, $4, $5, $9, $10, $11, $12, blob.id, $8 FROM blob
  ON CONFLICT (tenant_id, doc_type, source_key, chat_id) DO UPDATE SET
    blob_object_id = EXCLUDED.blob_object_id, mime_type = EXCLUDED.mime_type, status = 'pending', error = NULL, updated_at = now()
    WHERE d.blob_object_id IS DISTINCT FROM EXCLUDED.blob_object_id
  RETURNING id, status
)
SELECT (SELECT id FROM blob) AS blob_object_id,
       coalesce((SELECT id FROM doc), d.id) AS document_id, coalesce((SELECT status FROM doc), d.status) AS status
FROM (SELECT 1) one
LEFT JOIN content.documents d ON d.tenant_id = $1 AND d.doc_type = $2 AND d.source_key = $3 AND d.chat_id = $9`;

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
