/**
 * The bash producer: an executor that runs commands in their own process groups with bounded output
 * and an output file, the producer that registers them as `bash` tasks, and the model-facing tool.
 */

// The process layer's names an executor's options and facts use, so callers need not import it.
export {
  type LaunchedProcess,
  type LaunchRequest,
  type LimitBreach,
  type LimitFacts,
  type LimitMechanism,
  type LimitReason,
  LimitsUnavailableError,
  type ProcessEntry,
  type ProcessLauncher,
  type ProcessSource,
  procfsSource,
  ResourceLimiter,
  type ResourceLimitOptions,
  type ResourceLimitSetting,
  type ResourceLimits,
  resolveSandbox,
  SANDBOX_PROFILES,
  type Sandbox,
  type SandboxOptions,
  type SandboxProfile,
  type SandboxSetting,
  SandboxUnavailableError,
  type SendSignal,
  type Spawner,
  type TerminationReport,
} from '../../process/index.js';
export {
  type CancelTimer,
  type Clock,
  createManualClock,
  type ManualClock,
  systemClock,
} from '../../tasks/clock.js';
export { type BashFacts, bashFacts } from './bash-facts.js';
export { bashOutcome, bashTaskStatus, exitDetail } from './bash-outcome.js';
export {
  type BashOutputView,
  BashProducer,
  type BashProducerOptions,
  type BashTaskRequest,
  bashProducerOptions,
  createBashProducer,
  durationRule,
  type RemoteAttachment,
  type RemoteCommands,
  type RemoteStartOptions,
  type StartedBashTask,
  SUBAGENT_BACKGROUND_RUNTIME_CAP_MS,
} from './bash-producer.js';
export {
  BASH_TOOL_DEFAULTS,
  type BashDuplicateValue,
  type BashForegroundValue,
  type BashTool,
  type BashToolOptions,
  type BashToolValue,
  bashToolOptions,
  createBashTool,
  exitLine,
} from './bash-tool.js';
export { type BashToolInput, type BashToolSchemaOptions, bashToolSchema } from './bash-tool-schema.js';
export type { CommandHandle, CommandProcessFacts } from './command-handle.js';
export { normalizeCommand } from './duplicate-guard.js';
export {
  CommandTooLargeError,
  ExecutorDisposedError,
  ProcessIdInUseError,
  RunInBackgroundDisabledError,
  SpawnFailedError,
} from './errors.js';
export {
  BashExecutor,
  type CommandRequest,
  DEFAULT_STDERR_PREFIX,
  type ForegroundRunOptions,
  type ForegroundRunResult,
  MAX_COMMAND_TIMEOUT_MS,
} from './executor.js';
export {
  BASH_EXECUTOR_DEFAULTS,
  type BashExecutorOptions,
  bashExecutorOptions,
  OUTPUT_SNAPSHOT_BYTES,
  PROCESS_TAG_VARIABLE,
  type ResolvedExecutorOptions,
} from './executor-options.js';
export { describeExit, type ExitFacts, STOP_REASONS, type StopReason } from './exit-facts.js';
export {
  type OutputRead,
  type OutputSnapshot,
  ProcessHandle,
  type ResolvedCommand,
} from './process-handle.js';
export {
  RemoteCommandHandle,
  type RemoteCommandLink,
  type RemoteCommandSettings,
} from './remote-command-handle.js';
export { formatSkippedOutputMarker, withSkippedOutputMarker } from './skipped-output-marker.js';
