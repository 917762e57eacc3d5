/** `<task-notification>` formatters per kind, and the delivery policy the session runtime calls. */
export {
  createDeliveryPolicy,
  DELIVERY_POLICY_DEFAULTS,
  type DeliveryOutcome,
  type DeliveryPolicy,
  type DeliveryPolicyOptions,
  type DeliverySkipReason,
  deliveryPolicyOptions,
  detailOutputTail,
  type OutputTailSource,
} from './delivery-policy.js';
export {
  CUT_NOTE_FIELD,
  type EnvelopeField,
  NOTIFICATION_TAG,
  type RenderEnvelopeOptions,
  renderEnvelope,
} from './envelope.js';
export { bashSummary, formatBashNotification } from './format-bash.js';
export { formatGenericNotification } from './format-generic.js';
export { formatLostTaskNotification, type LostTaskFormatInput } from './format-lost.js';
export { formatMonitorNotification, type MonitorEvent, type MonitorFormatInput } from './format-monitor.js';
export { BUILT_IN_FORMATTERS, formatTaskNotification, formatterFor } from './format-notification.js';
export { formatSubagentNotification, subagentStatus, subagentSummary } from './format-subagent.js';
export {
  formatWorkflowNotification,
  formatWorkflowProgressNotification,
  WORKFLOW_NEXT_STEPS,
  WORKFLOW_PROGRESS_NEXT_STEPS,
  type WorkflowProgressEvent,
  type WorkflowProgressFormatInput,
  workflowNextStep,
  workflowSummary,
} from './format-workflow.js';
export { compileMonitorPattern, InvalidMonitorPatternError } from './monitor-pattern.js';
export {
  boundOutputTail,
  collectInstruction,
  DEFAULT_OUTPUT_TAIL_LIMITS,
  type NotificationFormatInput,
  type NotificationFormatter,
  type OutputTailLimits,
  outputTailOptions,
} from './notification-format.js';
export {
  describeStatus,
  presentedStatus,
  statusFacts,
  type TaskUsage,
  taskDescription,
  taskUsage,
} from './presented-status.js';
export { type AttemptClaimRelease, releaseAttemptClaim } from './release-attempt-claim.js';
export {
  createTaskMonitors,
  MonitorLimitError,
  type MonitorNotify,
  type MonitorRequest,
  type ResolvedTaskMonitorsLimits,
  type StartedMonitor,
  TASK_MONITORS_DEFAULTS,
  type TaskMonitors,
  type TaskMonitorsOptions,
  taskMonitorsOptions,
} from './task-monitors.js';
export {
  NOTIFICATION_LANES,
  type NotificationEvent,
  type NotificationLane,
  type TaskNotification,
} from './task-notification.js';
export {
  type EndOfAttempt,
  endCovers,
  MAX_TOLD_ENDINGS,
  ToldEndings,
  validateToldTaskEnd,
} from './told-endings.js';
