/**
 * @deprecated The pipeline_events listener lives in nodes/shared/postgres/listener.ts (the Pipeline
 * Trigger uses it, and no node imports another node). This re-export only keeps the import path of
 * test/integration (pipelineListener, pipelineRestart); delete it when they import the new path.
 */
export { PipelineListener, type ListenerOptions, type PipelineEvent } from '../../shared/postgres/listener';
