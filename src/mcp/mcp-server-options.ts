/** Options of the Errand MCP server, their defaults and their validation. */
import { readFileSync } from 'node:fs';
import type { ErrandRuntime } from '../host/index.js';
import { InvalidArgumentError, type Logger } from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../tasks/option-keys.js';
import {
  type ErrandTaskStoreOptions,
  integerOption,
  resolveErrandTaskStoreOptions,
} from './task-store-options.js';

/**
 * Options of `createErrandMcpServer`. A key not listed here (or in `tasks`) is rejected with
 * `UNKNOWN_OPTION`.
 */
export interface ErrandMcpServerOptions {
  /**
   * The runtime the connection's session lives in. Create it with `createMcpRuntime` (or with
   * `notifications.wakeBudget: 0`): notifications must stay queued for the MCP layer, not wake a model.
   */
  readonly runtime: ErrandRuntime;
  /** The server name in the `initialize` answer. Default `errand`. */
  readonly name?: string;
  /** The server version in the `initialize` answer. Default: the package's version. */
  readonly version?: string;
  /** The working directory of every command; wins over the client's roots. Default: none. */
  readonly cwd?: string;
  /** The working directory when there is no `cwd` and no usable client root. Default `process.cwd()`. */
  readonly launchDirectory?: string;
  /** Ask the client for its roots (`roots/list`) when it offers them. Default true. */
  readonly useRoots?: boolean;
  /** How long a tool call waits for the first `roots/list` answer (also that request's timeout). Default 5000 ms. */
  readonly rootsTimeoutMs?: number;
  /** Queued notifications appended to one tool result; the rest follow the next one. Default 10. */
  readonly maxNotificationsPerResult?: number;
  /** The most UTF-8 bytes of a tool's own text in a result (before notifications). Default 65536. */
  readonly maxToolResultBytes?: number;
  /** Also send each queued notification as an MCP logging message (`notifications/message`). Default true. */
  readonly logNotifications?: boolean;
  /** MCP Tasks for task-augmented `bash` calls, or false to leave them out. Default: on, with the store's defaults. */
  readonly tasks?: ErrandTaskStoreOptions | false;
  /** The session's title until the client says who it is. Default `MCP session`. */
  readonly sessionTitle?: string;
  /**
   * Resume this stored session instead of creating one (its durable tasks are re-attached, what ended
   * meanwhile is told once). When it cannot be resumed (another runtime holds it, it is gone) a new
   * session is created and a warning says why. Default: a new session.
   */
  readonly resumeSessionId?: string;
  /** Where warnings go (never stdout: it belongs to the protocol). Default: `process.emitWarning`. */
  readonly logger?: Logger;
}

/** Every key of `ErrandMcpServerOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const ERRAND_MCP_SERVER_OPTION_KEYS = optionKeys<ErrandMcpServerOptions>()({
  runtime: true,
  name: true,
  version: true,
  cwd: true,
  launchDirectory: true,
  useRoots: true,
  rootsTimeoutMs: true,
  maxNotificationsPerResult: true,
  maxToolResultBytes: true,
  logNotifications: true,
  tasks: true,
  sessionTitle: true,
  resumeSessionId: true,
  logger: true,
});

export interface ResolvedMcpServerOptions {
  readonly name: string;
  readonly version: string;
  readonly cwd: string | undefined;
  readonly launchDirectory: string;
  readonly useRoots: boolean;
  readonly rootsTimeoutMs: number;
  readonly maxNotificationsPerResult: number;
  readonly maxToolResultBytes: number;
  readonly logNotifications: boolean;
  readonly tasks: ErrandTaskStoreOptions | false;
  readonly sessionTitle: string;
  readonly resumeSessionId: string | undefined;
  readonly logger: Logger;
}

export const MCP_SERVER_DEFAULTS = Object.freeze({
  name: 'errand',
  useRoots: true,
  rootsTimeoutMs: 5_000,
  maxNotificationsPerResult: 10,
  maxToolResultBytes: 64 * 1024,
  logNotifications: true,
  sessionTitle: 'MCP session',
});

export const emitWarningLogger: Logger = {
  warn(message, context) {
    process.emitWarning(`${message}${context ? ` ${JSON.stringify(context)}` : ''}`, 'ErrandWarning');
  },
};

/** The package's version (`src/mcp` and `dist/mcp` both sit two levels below the package root). */
export function packageVersion(): string {
  try {
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

function optionalString(field: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '')
    throw new InvalidArgumentError(field, 'a non-empty string', value);
  return value;
}

function optionalBoolean(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(field, 'a boolean', value);
  return value;
}

export function resolveMcpServerOptions(options: ErrandMcpServerOptions): ResolvedMcpServerOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, ERRAND_MCP_SERVER_OPTION_KEYS, { where: 'createErrandMcpServer' });
  const runtime = options.runtime;
  if (typeof runtime?.createSession !== 'function' || typeof runtime.tasks?.get !== 'function') {
    throw new InvalidArgumentError('runtime', 'an ErrandRuntime', runtime);
  }
  if (options.logger !== undefined && typeof options.logger?.warn !== 'function') {
    throw new InvalidArgumentError('logger', 'an object with a warn method', options.logger);
  }
  let tasks: ErrandTaskStoreOptions | false = {};
  if (options.tasks === false) tasks = false;
  else if (options.tasks !== undefined) {
    resolveErrandTaskStoreOptions(options.tasks, 'tasks.', 'createErrandMcpServer');
    tasks = options.tasks;
  }
  const defaults = MCP_SERVER_DEFAULTS;
  return Object.freeze({
    name: optionalString('name', options.name) ?? defaults.name,
    version: optionalString('version', options.version) ?? packageVersion(),
    cwd: optionalString('cwd', options.cwd),
    launchDirectory: optionalString('launchDirectory', options.launchDirectory) ?? process.cwd(),
    useRoots: optionalBoolean('useRoots', options.useRoots, defaults.useRoots),
    rootsTimeoutMs: integerOption(
      'rootsTimeoutMs',
      options.rootsTimeoutMs,
      defaults.rootsTimeoutMs,
      1,
      2_147_483_647,
    ),
    maxNotificationsPerResult: integerOption(
      'maxNotificationsPerResult',
      options.maxNotificationsPerResult,
      defaults.maxNotificationsPerResult,
      1,
    ),
    maxToolResultBytes: integerOption(
      'maxToolResultBytes',
      options.maxToolResultBytes,
      defaults.maxToolResultBytes,
      1024,
    ),
    logNotifications: optionalBoolean(
      'logNotifications',
      options.logNotifications,
      defaults.logNotifications,
    ),
    tasks,
    sessionTitle: optionalString('sessionTitle', options.sessionTitle) ?? defaults.sessionTitle,
    resumeSessionId: optionalString('resumeSessionId', options.resumeSessionId),
    logger: options.logger ?? emitWarningLogger,
  });
}
