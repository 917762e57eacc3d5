/** Model-facing tools: the tool definition type, the task tools, the output limit, the stop dispatch, the prompt. */
export {
  type AutomatedTurnPolicy,
  AutomatedTurns,
  NEVER_IN_AUTOMATED_TURNS,
  READ_ONLY_TOOLS,
  ToolNotAllowedError,
} from './automated-turns.js';
export { ToolCallAbortedError, ToolsDisposedError } from './errors.js';
export { type ForegroundCall, ForegroundCalls } from './foreground-calls.js';
export { type LimitToolTextOptions, limitToolResult, limitToolText } from './output-limit.js';
export {
  compileReadiness,
  describeProbe,
  formatReadiness,
  InvalidReadinessError,
  READINESS_DEFAULTS,
  type ReadinessInput,
  type ReadinessLimits,
  type ReadinessProbe,
  type ReadinessResult,
  readinessSchema,
  waitForReadiness,
} from './readiness.js';
export { RECORDED_OUTPUT_READ_BYTES, type RecordedTaskOutput, type RecordedTasks } from './recorded-tasks.js';
export { describeSandbox } from './sandbox-description.js';
export { formatStatusLine } from './status-line.js';
export {
  createStopDispatch,
  killWithInitiator,
  type StopAllEntry,
  type StopDispatch,
  type StopDispatchOptions,
  type StopFailureReason,
  type StopRequest,
  type StopResult,
  type StopStrategy,
  type StopStrategyContext,
} from './stop-dispatch.js';
export { TASK_TOOLS_PROMPT, type TaskToolsPromptOptions, taskToolsPrompt } from './system-prompt.js';
export {
  createTaskDigestTool,
  DEFAULT_TASK_DIGEST_BYTES,
  formatTaskDigest,
  TASK_DIGEST_TOOL_NAME,
  type TaskDigest,
  type TaskDigestInput,
  taskDigest,
  type UntoldEnding,
} from './task-digest.js';
export {
  createTaskKillTool,
  TASK_KILL_TOOL_NAME,
  type TaskKillInput,
  type TaskKillValue,
} from './task-kill.js';
export {
  createTaskListTool,
  formatTaskLine,
  NO_BACKGROUND_TASKS,
  TASK_LIST_TOOL_NAME,
  type TaskListInput,
  type TaskListValue,
} from './task-list.js';
export {
  createTaskMonitorTool,
  TASK_MONITOR_TOOL_NAME,
  type TaskMonitorInput,
  type TaskMonitorValue,
} from './task-monitor.js';
export {
  createTaskOutputTool,
  TASK_OUTPUT_TOOL_NAME,
  type TaskOutputInput,
  type TaskOutputValue,
} from './task-output.js';
export { createTaskTools, type TaskTools } from './task-tools.js';
export {
  type ResolvedTaskToolsOptions,
  TASK_TOOLS_DEFAULTS,
  type TaskToolsOptions,
  taskToolsOptions,
} from './task-tools-options.js';
export {
  type AnyToolDefinition,
  type BackgroundToolValue,
  type DefineToolOptions,
  defineTool,
  describeToolError,
  type ExecuteToolOptions,
  executeTool,
  hasInputKey,
  type JsonSchema,
  type ToldTaskEnd,
  type ToolContext,
  type ToolDefinition,
  type ToolPolicy,
  type ToolResult,
  toldTaskEnd,
  toldTaskEnds,
  toolError,
  toolResult,
} from './tool-definition.js';
