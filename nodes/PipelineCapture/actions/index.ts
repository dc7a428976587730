/** Resources and their operations (one file per operation under ./run and ./job). */
import { claimJobsOperation } from './job/claimJobs.operation';
import { finishJobOperation } from './job/finishJob.operation';
import { getStatsOperation } from './job/getStats.operation';
import { releaseStaleOperation } from './job/releaseStale.operation';
import { pipelineMetricsOperation } from './metrics/pipelineMetrics.operation';
import { generateOperation } from './model/generate.operation';
import { archiveOperation } from './run/archive.operation';
import { captureOperation } from './run/capture.operation';
import { completeStepOperation } from './run/completeStep.operation';
import { createRunOperation } from './run/createRun.operation';
import { failOperation } from './run/fail.operation';
import { getStatusOperation } from './run/getStatus.operation';
import { loadStepContextOperation } from './run/loadStepContext.operation';
import { sweepOperation } from './run/sweep.operation';
import { exportOperation } from './stateMachine/export.operation';
import { importOperation } from './stateMachine/import.operation';
import { findOperation, type Resource } from '../../shared/node/router';
import type { PipelineOperation } from './types';

export const PIPELINE_RESOURCES: Resource<PipelineOperation>[] = [
	{
		value: 'run',
		name: 'Pipeline Run',
		operations: [
			createRunOperation,
			captureOperation,
			loadStepContextOperation,
			completeStepOperation,
			failOperation,
			getStatusOperation,
			archiveOperation,
			sweepOperation,
		],
	},
	{ value: 'model', name: 'Model', operations: [generateOperation] },
	{ value: 'stateMachine', name: 'State Machine', operations: [importOperation, exportOperation] },
	{
		value: 'job',
		name: 'Job',
		operations: [claimJobsOperation, finishJobOperation, releaseStaleOperation, getStatsOperation],
	},
	{ value: 'metrics', name: 'Metrics', operations: [pipelineMetricsOperation] },
];

/**
 * The operation of a resource (kept for callers that name it, e.g. the job-queue tests).
 * @throws Error for an unknown pair (a corrupted workflow)
 */
export function findPipelineOperation(resource: string, operation: string): PipelineOperation {
	return findOperation(PIPELINE_RESOURCES, resource, operation, 'PipelineCapture');
}
