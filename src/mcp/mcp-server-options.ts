/** Options of the Errand MCP server: one declaration with their defaults and their validation. */
import type { ErrandRuntime } from '../host/index.js';
import { emitWarningLogger, MAX_TIMER_DELAY_MS } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import { MCP_SERVER_NAME, packageVersion } from './server-identity.js';
import { errandTaskStoreOptions } from './task-store-options.js';

export { packageVersion };

const isRuntime = (value: unknown) => {
  const runtime = value as Partial<ErrandRuntime> | null;
  return typeof runtime?.createSession === 'function' && typeof runtime.tasks?.get === 'function';
};

/**
 * The options of `createErrandMcpServer`. A key not declared here (or in `tasks`) is rejected with
 * `UNKNOWN_OPTION`.
 */
export const errandMcpServerOptions = defineOptions('createErrandMcpServer', {
  /**
   * The runtime the connection's session lives in. Create it with `createMcpRuntime` (or with
   * `notifications.wakeBudget: 0`): notifications must stay queued for the MCP layer, not wake a model.
   */
  runtime: option.required(option.custom<ErrandRuntime>('an ErrandRuntime', isRuntime)),
  /** The server name in the `initialize` answer. Default `errand`. */
  name: option.string({ default: MCP_SERVER_NAME }),
  /** The server version in the `initialize` answer. Default: the package's version. */
  version: option.string({ fallback: packageVersion }),
  /** The working directory of every command; wins over the client's roots. Default: none. */
  cwd: option.string(),
  /** The working directory when there is no `cwd` and no usable client root. Default `process.cwd()`. */
  launchDirectory: option.string({ fallback: () => process.cwd() }),
  /** Ask the client for its roots (`roots/list`) when it offers them. Default true. */
  useRoots: option.boolean({ default: true }),
  /** How long a tool call waits for the first `roots/list` answer (also that request's timeout). Default 5000 ms. */
  rootsTimeoutMs: option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 5_000 }),
  /** Queued notifications appended to one tool result; the rest follow the next one. Default 10. */
  maxNotificationsPerResult: option.integer({ min: 1, default: 10 }),
  /** The most UTF-8 bytes of a tool's own text in a result (before notifications). Default 65536. */
  maxToolResultBytes: option.integer({ min: 1024, default: 64 * 1024 }),
  /** Also send each queued notification as an MCP logging message (`notifications/message`). Default true. */
  logNotifications: option.boolean({ default: true }),
  /** MCP Tasks for task-augmented `bash` calls, or false to leave them out. Default: on, with the store's defaults. */
  tasks: option.orFalse(option.nested(errandTaskStoreOptions)),
  /** The session's title until the client says who it is. Default `MCP session`. */
  sessionTitle: option.string({ default: 'MCP session' }),
  /**
   * Resume this stored session instead of creating one (its durable tasks are re-attached, what ended
   * meanwhile is told once). When it cannot be resumed (another runtime holds it, it is gone) a new
   * session is created and a warning says why. Default: a new session.
   */
  resumeSessionId: option.string(),
  /** Where warnings go (never stdout: it belongs to the protocol). Default: `process.emitWarning`. */
  logger: option.logger({ default: emitWarningLogger }),
});

/** Options of `createErrandMcpServer`. */
export type ErrandMcpServerOptions = OptionsInput<typeof errandMcpServerOptions.rules>;
export type ResolvedMcpServerOptions = ResolvedOptions<typeof errandMcpServerOptions.rules>;

/** The fixed defaults of `ErrandMcpServerOptions`. */
export const MCP_SERVER_DEFAULTS = errandMcpServerOptions.defaults;
