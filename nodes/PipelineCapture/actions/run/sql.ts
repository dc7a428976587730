/** temporary: removed when runs.ts is split (its statements live in nodes/shared/statements/pipelineRuns.ts). */
export * from '../../../shared/statements/pipelineRuns';
