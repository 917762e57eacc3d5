/** Model-facing tools: the tool definition type, the task tools, the output limit, the stop dispatch, the prompt. */
export * from './errors.js';
export * from './foreground-calls.js';
export * from './output-limit.js';
export * from './sandbox-description.js';
export * from './status-line.js';
export * from './stop-dispatch.js';
export * from './system-prompt.js';
export * from './task-kill.js';
export * from './task-list.js';
export * from './task-output.js';
export * from './task-tools.js';
export * from './task-tools-options.js';
export * from './tool-definition.js';
