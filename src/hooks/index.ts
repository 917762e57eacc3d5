/**
 * Client hooks: how `errand hook` hands a session's queued notifications to the model inside Claude
 * Code, Codex and Gemini CLI (their hook contracts, the protocol with the MCP server's socket, the
 * registry of servers in the data directory) and how `errand install` writes those clients' settings.
 */
export {
  canWake,
  compactionHappens,
  formatHookOutput,
  HOOK_CLIENTS,
  type HookClient,
  type HookInput,
  type HookMoment,
  hookEventFor,
  hookEventsOf,
  isHookClient,
  momentOf,
  parseHookInput,
  promptContinuesBlock,
} from './hook-clients.js';
export {
  encodeLine,
  HOLD_MODES,
  HOOK_PROTOCOL_VERSION,
  type HoldMode,
  type HookNotification,
  type HookRequest,
  LineReader,
  MAX_HOOK_LINE_BYTES,
  parseTakeAnswer,
  parseTakeRequest,
  type RunningNotice,
  type RunningTask,
  type SettleAnswer,
  type SettleRequest,
  type TakeAnswer,
  type TakeRequest,
} from './hook-protocol.js';
export { type HookRunResult, RUN_HOOK_DEFAULTS, type RunHookOptions, runHook } from './run-hook.js';
export {
  ancestorsOf,
  type CommandLineReader,
  chooseSocketPath,
  clientOf,
  identityOf,
  isRunning,
  listLiveServers,
  type ProcessIdentity,
  procfsCommandLine,
  RUN_DIRECTORY_NAME,
  runDirectoryOf,
  SERVER_RECORD_SCHEMA_VERSION,
  type ServerRecord,
  serversOfClient,
  writeServerRecord,
} from './server-registry.js';
