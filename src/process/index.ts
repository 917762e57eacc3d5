/**
 * The process layer: what every producer that runs operating-system processes shares. Launching (the
 * spawn seam), the /proc process table, the census of a process tree and its terminator, a terminal's
 * foreground group, bounded pipe waits, the private output directory and the one capped output-file
 * writer; the lifeline (a sidecar that stops a dead runtime's trees), recognising a tree after the fact,
 * exit-status files and following a file another process writes; and the sandbox profiles that rewrite a
 * launch to run under bubblewrap. It knows no task, session or store: it sits above the contract
 * (`tasks/`) and `text/` only.
 */

export {
  type BubblewrapFeatures,
  bubblewrapFeatures,
  parseBubblewrapHelp,
} from './launch/bubblewrap-features.js';
export { NODE_SPAWN_VARIABLE, nativeSpawnAvailable } from './launch/native-spawn.js';
export {
  type HiddenPath,
  hiddenPaths,
  hideEntriesFromSandboxes,
  hideFromSandboxes,
  MAX_HIDDEN_ENTRIES_PER_PARENT,
} from './launch/private-paths.js';
export {
  createSpawnLauncher,
  type LaunchedProcess,
  type LaunchRequest,
  launchEnvironment,
  type ProcessLauncher,
  type Spawner,
} from './launch/process-launcher.js';
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
  SandboxTooOldError,
  SandboxUnavailableError,
  sandboxOption,
  sandboxSummaryOf,
} from './launch/sandbox.js';
export { checkSpawnable, findOnPath, isExecutableFile } from './launch/spawn-check.js';
export { diagnoseSpawnFailure, errnoOf } from './launch/spawn-failure.js';
export {
  outputFileBeside,
  type RecordedEnd,
  readStatusFile,
  statusFileBeside,
  writeStatusFile,
} from './lifeline/exit-status-file.js';
export {
  defaultSidecarScript,
  isLifelineLink,
  LIFELINE_DEFAULTS,
  LIFELINE_TAG_VARIABLE,
  Lifeline,
  type LifelineLink,
  type LifelineOptions,
  type LifelineTree,
} from './lifeline/lifeline.js';
export { LIFELINE_PROTOCOL_VERSION } from './lifeline/lifeline-protocol.js';
export {
  type CgroupLayout,
  type CgroupMembership,
  type CgroupMount,
  findV1Bases,
  findV2Base,
  parseCgroupMemberships,
  parseCgroupMounts,
} from './limits/cgroup-layout.js';
export { type CgroupCounters, CgroupNode, type CgroupPlace } from './limits/cgroup-node.js';
export {
  SHIM_FAILURE_EXIT_CODE,
  SHIM_SHELL,
  type ShimRlimits,
  type ShimSettings,
  shimScript,
  wrapInLimitShim,
} from './limits/limit-shim.js';
export {
  type CheckedLimitOptions,
  checkLimitOptions,
  isResourceLimiter,
  LIMIT_GROUP_PREFIX,
  type LimitedLaunch,
  LimitsUnavailableError,
  limiterOf,
  ResourceLimiter,
  type ResourceLimiterSettings,
  type ResourceLimitSetting,
  removeLeftoverGroups,
  resourceLimitsOption,
} from './limits/resource-limiter.js';
export {
  DEFAULT_LIMIT_POLL_MS,
  describeBreach,
  describeLimitSet,
  formatBytes,
  LIMIT_MECHANISMS,
  LIMIT_REASONS,
  type LimitBreach,
  type LimitFacts,
  type LimitMechanism,
  type LimitReason,
  limitsAnything,
  limitsSummaryOf,
  MIN_MEMORY_LIMIT_BYTES,
  type ResourceLimitOptions,
  type ResourceLimits,
  resolveLimitSet,
} from './limits/resource-limits.js';
export { DetailThrottle } from './output/detail-throttle.js';
export { FileFollower, type FileFollowerOptions } from './output/file-follower.js';
export {
  type LeftoverOutputSweep,
  type LeftoverOutputSweepOptions,
  OutputDirectory,
  removeLeftoverOutputDirectories,
} from './output/output-directory.js';
export { outputFileStream, readFileRange } from './output/output-file-stream.js';
export {
  type OpenOutputFile,
  OutputFileWriter,
  type OutputFileWriterOptions,
} from './output/output-file-writer.js';
export { closedWithin, drainedWithin } from './output/pipe-wait.js';
export { endingBegan, endingsUnderway } from './trees/endings-underway.js';
export { parseForegroundGroup, readForegroundGroup } from './trees/foreground-group.js';
export {
  formatEnvironmentTag,
  type ProcessIdentity,
  parseEnvironmentTag,
  type Recognition,
  recognizeTree,
} from './trees/process-identity.js';
export { ProcessSweep, type ProcessSweepOptions } from './trees/process-sweep.js';
export {
  findEnvironmentValue,
  isDead,
  memoizedSource,
  type ProcessEntry,
  type ProcessSource,
  parseProcessStat,
  procfsSource,
} from './trees/process-table.js';
export { ProcessTags } from './trees/process-tags.js';
export {
  type SendSignal,
  type TerminationReport,
  TreeTerminator,
  type TreeTerminatorOptions,
} from './trees/process-terminator.js';
export {
  type CensusOptions,
  censusTree,
  type EnvironmentTag,
  type ScanOptions,
  scanTree,
  type TreeCensus,
  type TreeRoot,
} from './trees/process-tree.js';
export {
  type RecognizedTreeStopOptions,
  type RunningRecognition,
  stopRecognizedTree,
} from './trees/recognized-tree.js';
export {
  isLimitStopReason,
  type RequestedStopReason,
  STOP_REASONS,
  type StopReason,
} from './trees/stop-reason.js';
export {
  describePeer,
  findSs,
  type PeerFacts,
  PeerUnknownError,
  peerInodeIn,
  peerProcessesOf,
} from './trees/unix-socket-peer.js';
