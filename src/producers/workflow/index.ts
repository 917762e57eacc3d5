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
export type {
  WorkflowAgentOptions,
  WorkflowAgentResult,
  WorkflowBashOptions,
  WorkflowCommandResult,
  WorkflowContext,
  WorkflowFunction,
} from './workflow-context.js';
export { type WorkflowFacts, workflowFacts } from './workflow-facts.js';
export {
  type ResolvedWorkflowOptions,
  WORKFLOW_DEFAULTS,
  type WorkflowProducerOptions,
  workflowProducerOptions,
} from './workflow-options.js';
export {
  createWorkflowProducer,
  WorkflowProducer,
  type WorkflowShutdownSweep,
  workflowShutdownSweep,
} from './workflow-producer.js';
export type {
  AmendedWorkflow,
  StartedWorkflow,
  WorkflowAmendOptions,
  WorkflowCallerOptions,
  WorkflowStartRequest,
} from './workflow-request.js';
export {
  createWorkflowTools,
  WORKFLOW_TOOL_NAMES,
  type WorkflowAmendInput,
  type WorkflowAnswerInput,
  type WorkflowResumeInput,
  type WorkflowRunInput,
  type WorkflowTools,
  type WorkflowToolsOptions,
} from './workflow-tools.js';
