/**
 * `error_context` (seed 002 §1.2, §2.3): which node, operation and table an error came from.
 * The node name is always stamped explicitly by the calling workflow or node (seed 002 §3.2).
 */
import { z } from 'zod';

export const DbOperation = z.enum(['select', 'insert', 'update', 'delete', 'upsert']);

export const ErrorContext = z
	.object({
		node: z.string().min(1),
		operation: z.string().optional(),
		table: z.string().optional(),
		correlation_id: z.string().uuid().optional(),
		error_message: z.string().optional(),
		status_code: z.number().int().optional(),
	})
	.passthrough();
export type ErrorContext = z.infer<typeof ErrorContext>;
