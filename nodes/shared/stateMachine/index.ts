/** State machines as data (seed 004): schema, criteria, validation, engine, export, PostgreSQL store, EXTERNAL processors. */
export * from './schema';
export { evaluate, select, type EntityMeta } from './criteria';
export { validateDefinition, findUnguardedCycle } from './validate';
export {
	cascade,
	fireManual,
	runTransitionProcessors,
	abortError,
	availableTransitions,
	selectWorkflow,
	MAX_CASCADE_DEPTH,
	MAX_STATE_VISITS,
	type AbortCode,
	type EngineResult,
	type EngineOptions,
	type ProcessorOutcome,
} from './engine';
export { exportDefinition } from './exportFormat';
export { importWorkflows, exportWorkflows, loadWorkflows, parseImport, type ModelRef } from './store';
export {
	externalProcessorRunner,
	selectCalculationNode,
	parseTags,
	readAnswer,
	DEFAULT_RESPONSE_TIMEOUT_MS,
	type CalculationNode,
	type ProcessorRequest,
	type SubWorkflowCaller,
} from './processors';
