/** Where content came from (seed 003 WF30–WF32 `req.ctx`): its chat and who may see it. */
import { z } from 'zod';
import { BigIntLike, DbId } from './request';

/**
 * `{ chat_id, visibility: "group" | "dm", dm_owner_user_id, message_version_id }` (passthrough):
 * dm_owner_user_id is required for dm and null for group (422 naming `dm_owner_user_id` otherwise).
 */
export const SourceCtx = z
	.object({
		chat_id: BigIntLike,
		visibility: z.enum(['group', 'dm'], { errorMap: () => ({ message: 'must be "group" or "dm"' }) }),
		dm_owner_user_id: BigIntLike.nullish().transform((v) => v ?? null),
		message_version_id: DbId.nullish().transform((v) => v ?? null),
	})
	.passthrough()
	.superRefine((source, refinement) => {
		if ((source.visibility === 'dm') !== (source.dm_owner_user_id !== null)) {
			refinement.addIssue({
				code: z.ZodIssueCode.custom,
				path: ['dm_owner_user_id'],
				message: 'is required for dm and must be null for group',
			});
		}
	});
export type SourceCtx = z.infer<typeof SourceCtx>;
