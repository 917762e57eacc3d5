/**
 * The process layer: what every producer that runs operating-system processes shares. Launching (the
 * spawn seam), the /proc process table, the census of a process tree and its terminator, a terminal's
 * foreground group, bounded pipe waits, the private output directory and the one capped output-file
 * writer; the lifeline (a sidecar that stops a dead runtime's trees), recognising a tree after the fact,
 * exit-status files and following a file another process writes; and the sandbox profiles that rewrite a
 * launch to run under bubblewrap. It knows no task, session or store: it sits above the contract
 * (`tasks/`) and `text/` only.
 */
export { DetailThrottle } from './detail-throttle.js';
export {
  outputFileBeside,
  type RecordedEnd,
  readStatusFile,
  statusFileBeside,
  writeStatusFile,
} from './exit-status-file.js';
export { FileFollower, type FileFollowerOptions } from './file-follower.js';
export { parseForegroundGroup, readForegroundGroup } from './foreground-group.js';
export {
  defaultSidecarScript,
  isLifelineLink,
  LIFELINE_DEFAULTS,
  LIFELINE_TAG_VARIABLE,
  Lifeline,
  type LifelineLink,
  type LifelineOptions,
  type LifelineTree,
} from './lifeline.js';
export { LIFELINE_PROTOCOL_VERSION } from './lifeline-protocol.js';
export { NODE_SPAWN_VARIABLE, nativeSpawnAvailable } from './native-spawn.js';
export {
  type LeftoverOutputSweep,
  type LeftoverOutputSweepOptions,
  OutputDirectory,
  removeLeftoverOutputDirectories,
} from './output-directory.js';
export { outputFileStream, readFileRange } from './output-file-stream.js';
export {
  type OpenOutputFile,
  OutputFileWriter,
  type OutputFileWriterOptions,
} from './output-file-writer.js';
export { closedWithin, drainedWithin } from './pipe-wait.js';
export {
  formatEnvironmentTag,
  type ProcessIdentity,
  parseEnvironmentTag,
  type Recognition,
  recognizeTree,
} from './process-identity.js';
export {
  createSpawnLauncher,
  type LaunchedProcess,
  type LaunchRequest,
  launchEnvironment,
  type ProcessLauncher,
  type Spawner,
} from './process-launcher.js';
export { ProcessSweep, type ProcessSweepOptions } from './process-sweep.js';
export {
  findEnvironmentValue,
  isDead,
  memoizedSource,
  type ProcessEntry,
  type ProcessSource,
  parseProcessStat,
  procfsSource,
} from './process-table.js';
export { ProcessTags } from './process-tags.js';
export {
  type SendSignal,
  type TerminationReport,
  TreeTerminator,
  type TreeTerminatorOptions,
} from './process-terminator.js';
export {
  type CensusOptions,
  censusTree,
  type EnvironmentTag,
  type ScanOptions,
  scanTree,
  type TreeCensus,
  type TreeRoot,
} from './process-tree.js';
export {
  type RecognizedTreeStopOptions,
  type RunningRecognition,
  stopRecognizedTree,
} from './recognized-tree.js';
export {
  BUBBLEWRAP_PACKAGE,
  isSandbox,
  resolveSandbox,
  SANDBOX_PROFILES,
  type Sandbox,
  type SandboxFacts,
  type SandboxOptions,
  type SandboxProfile,
  type SandboxSetting,
  SandboxUnavailableError,
  sandboxOption,
  sandboxSummaryOf,
} from './sandbox.js';
export { checkSpawnable, findOnPath, isExecutableFile } from './spawn-check.js';
export { diagnoseSpawnFailure, errnoOf } from './spawn-failure.js';
export { type RequestedStopReason, STOP_REASONS, type StopReason } from './stop-reason.js';
