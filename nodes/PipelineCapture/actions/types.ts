/** The shape every PipelineCapture operation module exports (one file per operation). */
import type { INodeProperties } from 'n8n-workflow';
import type { Operation as RouterOperation, OutputSpec } from '../../shared/node/router';
import type { ContractError } from '../../shared/errors';
import type { Pool } from 'pg';
import type { EngineOptions, WorkflowDefinition } from '../../shared/stateMachine';
import type { LlmCredential, Sender } from '../../shared/llm/generate';

/**
 * What one item's operation receives (`deps`): its dependencies, built per item by the node's Route. Not the
 * seed's travelling ctx (that is `state.ctx`, nodes/shared/contracts/ctx.ts newCtx).
 */
export interface PipelineContext {
	pool: Pool;
	/** Loads the pipeline_runs state machine (cached). */
	definition(): Promise<WorkflowDefinition>;
	/** Worker name for locks and captures: `n8n-<execution id>` unless set. */
	worker: string;
	/**
	 * The key of this call, identical when n8n retries the node (Retry On Fail) and different for every
	 * other call: `<execution id>:<node name>:<run index>:<item index>`. Capture stores it with its capture
	 * so that a retry after a lost reply recognises its own commit (docs/retry-safety.md). Optional: none, no
	 * replay.
	 */
	callKey?: string;
	/**
	 * The Contracts LLM API credential, an HTTP sender and n8n's execution cancel signal when the running
	 * n8n offers one (getExecutionCancelSignal; it ends a retry wait) (Model resource only).
	 */
	llm(): Promise<{ credential: LlmCredential; send: Sender; signal?: AbortSignal }>;
	/**
	 * Runs the EXTERNAL processors of the transitions Capture / Complete Step fire: dispatched to the
	 * sub-workflows of the node's Calculation Nodes parameter (shared/stateMachine/processors.ts).
	 */
	runProcessor?: EngineOptions['runProcessor'];
	/** The workflow label and node name, for the ops.errors rows of processor warnings. */
	origin?: { workflow: string; node: string };
}

/**
 * Pipeline Capture's main outputs (version 2): those of the selected operation (PipelineOperation.outputs),
 * by default one, "Done"; Capture has "Done" and "Not Captured". Version 1 always has "Done" and "Not
 * Captured" (existing workflows keep their meaning). n8n appends the error output after them when On Error
 * is "Continue (using error output)": main[1] for a one-output operation (v2), main[2] for Capture and v1.
 */
export const PIPELINE_OUTPUTS: OutputSpec = {
	names: ['Done'],
	fixedBefore: { version: 2, names: ['Done', 'Not Captured'] },
};

/** `data` of the SuccessEnvelope, and the output: 0 "Done", 1 "Not Captured" (a lost race, nothing claimed). */
export interface PipelineResult {
	/** `data` of the one SuccessEnvelope emitted for the input item… */
	data?: Record<string, unknown>;
	/** …or the `data` of one envelope per element (Sweep, Claim Jobs); none when empty. */
	many?: Record<string, unknown>[];
	output: 0 | 1;
	statusCode?: 200 | 201;
}

/** A PipelineCapture operation: the router's Operation (../../shared/node/router.ts), optionally batched. */
export interface PipelineOperation
	extends RouterOperation<(deps: PipelineContext, input: Record<string, unknown>) => Promise<PipelineResult>> {
	fields: INodeProperties[];
	/**
	 * The operation's main output names in index order (default ["Done"], PIPELINE_OUTPUTS): an operation
	 * answering `output: 1` declares a second one (Capture: ["Done", "Not Captured"]).
	 */
	outputs?: string[];
	/**
	 * All items of one execution at once (Finish Job: one statement for the batch), used instead of
	 * `execute` when present: one result or that item's own ContractError per entry, in order.
	 * @throws ContractError when the whole batch failed (every item gets it)
	 */
	executeBatch?(
		entries: Array<{ deps: PipelineContext; input: Record<string, unknown> }>,
	): Promise<Array<PipelineResult | ContractError>>;
}
