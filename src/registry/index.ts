/** The in-process TaskService provider. */
export { createTaskService, LocalTaskService, MAX_WAIT_MS } from './local-task-service.js';
export {
  type SequenceBlock,
  type SequenceBlocks,
  type StartGuardRequest,
  TASK_SERVICE_DEFAULTS,
  type TaskServiceOptions,
  taskServiceOptions,
} from './options.js';
export { type OutputPage, type OutputPageRequest, readOutputPage } from './output-page.js';
