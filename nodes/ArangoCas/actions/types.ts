/** The shape every ArangoCAS operation module exports (one file per operation, nodes-base style). */
import type { Database } from 'arangojs';
import type { INodeProperties } from 'n8n-workflow';
import type { Operation as RouterOperation } from '../../shared/node/router';

/** Facts about the running item that an operation may record (request ids, timestamps). */
export interface RunInfo {
	/** n8n execution id (tracking id of 3.1's `request_id`). */
	executionId: string;
}

/** What an operation returns: `data` of the SuccessEnvelope and its status code (200, or 201 when it created something). */
export interface OperationResult {
	data: Record<string, unknown>;
	statusCode: 200 | 201;
}

/** An ArangoCAS operation: the router's Operation (../../shared/node/router.ts) with its own fields and signature. */
export interface Operation
	extends RouterOperation<(db: Database, input: Record<string, unknown>, run: RunInfo) => Promise<OperationResult>> {
	/** The operation's input fields (shown only for this resource/operation). */
	fields: INodeProperties[];
}
