/** Test doubles that follow Errand's contracts, for harness authors' tests and Errand's own. */
export {
  lastUserText,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedReply,
  type ScriptedStep,
  scriptedModel,
} from './scripted-model.js';
export {
  type CancelBehavior,
  type ScriptedTask,
  type ScriptedTaskOptions,
  scriptedTask,
} from './scripted-task.js';
export {
  type ConformanceLimits,
  type ConformanceTestFunctions,
  describeTaskServiceConformance,
  type LoggedWarning,
  type TaskServiceConformanceFactory,
  type TaskServiceConformanceOptions,
  type TaskServiceConformanceSetup,
  type TaskServiceConformanceSubject,
} from './task-service-conformance.js';
