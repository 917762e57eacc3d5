/** Workflow runs as background tasks: the journaled engine, the producer, and the model-facing tools. */
export {
  WorkflowAgentFailedError,
  WorkflowAgentUnavailableError,
  WorkflowCancelledError,
  WorkflowCommandFailedError,
  WorkflowDirectoryNotConfiguredError,
  WorkflowDuplicateStepError,
  WorkflowNoPendingInputError,
  WorkflowProducerDisposedError,
  WorkflowResultNotJsonError,
  WorkflowRunStateError,
  WorkflowScriptChangedError,
  WorkflowScriptError,
} from './errors.js';
export {
  type LoadedScript,
  type LocatedScript,
  loadScript as loadWorkflowScript,
  locateScript as locateWorkflowScript,
  WORKFLOW_SCRIPT_EXTENSIONS,
} from './script-loader.js';
export type * from './workflow-context.js';
export {
  type ResolvedWorkflowOptions,
  WORKFLOW_DEFAULTS,
  type WorkflowProducerOptions,
} from './workflow-options.js';
export {
  type AmendedWorkflow,
  createWorkflowProducer,
  type StartedWorkflow,
  type WorkflowAmendOptions,
  type WorkflowCallerOptions,
  WorkflowProducer,
  type WorkflowShutdownSweep,
  type WorkflowStartRequest,
  workflowShutdownSweep,
} from './workflow-producer.js';
export * from './workflow-tools.js';
