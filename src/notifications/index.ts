/** `<task-notification>` formatters per kind, and the delivery policy the session runtime calls. */
export * from './delivery-policy.js';
export * from './envelope.js';
export * from './format-bash.js';
export * from './format-generic.js';
export * from './format-lost.js';
export * from './format-monitor.js';
export * from './format-notification.js';
export * from './format-subagent.js';
export * from './format-workflow.js';
export * from './monitor-pattern.js';
export * from './notification-format.js';
export * from './release-attempt-claim.js';
export * from './reported-ends.js';
export * from './task-facts.js';
export * from './task-monitors.js';
export * from './task-notification.js';
