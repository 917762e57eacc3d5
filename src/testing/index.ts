/** Test doubles that follow Errand's contracts, for harness authors' tests and Errand's own. */
export * from './scripted-model.js';
export * from './scripted-task.js';
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
