/** Options of the dashboard server, their defaults and their validation. */
import { fileURLToPath } from 'node:url';
import { createConsoleLogger, InvalidArgumentError, type Logger } from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../tasks/option-keys.js';
import { generateAccessToken, MIN_TOKEN_LENGTH } from './access-token.js';
import type { DashboardBackend } from './dashboard-backend.js';

export const consoleDashboardLogger: Logger = createConsoleLogger('errand dashboard');

/** Options of `createDashboardServer`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface DashboardServerOptions {
  readonly backend: DashboardBackend;
  /** The interface to bind. Default `127.0.0.1`. Anything not loopback needs `allowRemote`. */
  readonly host?: string;
  /** The port; 0 picks a free one. Default 0. */
  readonly port?: number;
  /** Binding a non-loopback interface exposes the dashboard to the network (token still required). Default false. */
  readonly allowRemote?: boolean;
  /** The access token (at least 32 characters). Default: 32 random bytes, base64url. */
  readonly token?: string;
  /**
   * Extra `Host` names accepted besides localhost, 127.0.0.1, [::1] and `host` (guards DNS rebinding).
   * With `allowRemote`, list the names clients reach the server by.
   */
  readonly allowedHosts?: readonly string[];
  /** Extra origins allowed to send commands besides the server's own (e.g. `https://dash.example`). */
  readonly allowedOrigins?: readonly string[];
  /** The largest command body accepted. Default 16384 bytes. */
  readonly maxBodyBytes?: number;
  /** Bytes of an output snapshot. Default (and maximum) 8192. */
  readonly outputSnapshotMaxBytes?: number;
  /**
   * The most bytes of output one page (`GET …/output?from=`) or one stream event carries (4 to 1048576;
   * at most the task service's `maxCursorReadBytes`). Default 65536.
   */
  readonly outputPageMaxBytes?: number;
  /** Concurrent live output streams (`GET …/output/stream`); more are refused with 503. Default 32. */
  readonly maxOutputStreams?: number;
  /** Sessions walked up the parent chain looking for a work's output. Default 32. */
  readonly maxParentDepth?: number;
  /** Heartbeat comments on event streams keep proxies and idle timers from closing them. Default 15000 ms. */
  readonly heartbeatMs?: number;
  /**
   * Unsent bytes one event-stream client may hold, beyond what it was sent on connecting (its replay or
   * level), before it is dropped; it reconnects and resumes. Default 1 MiB.
   */
  readonly maxClientBufferBytes?: number;
  /** Concurrent event-stream clients; more are refused with 503. Default 64. */
  readonly maxEventClients?: number;
  /** The directory holding the page (`index.html`, `app.js`, `app.css`). Default: the package's `web/`. */
  readonly assetsDirectory?: string;
  /** Told about failed requests, failed stops and dropped clients. Default: `consoleDashboardLogger`. */
  readonly logger?: Logger;
}

/** Every key of `DashboardServerOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const DASHBOARD_SERVER_OPTION_KEYS = optionKeys<DashboardServerOptions>()({
  backend: true,
  host: true,
  port: true,
  allowRemote: true,
  token: true,
  allowedHosts: true,
  allowedOrigins: true,
  maxBodyBytes: true,
  outputSnapshotMaxBytes: true,
  outputPageMaxBytes: true,
  maxOutputStreams: true,
  maxParentDepth: true,
  heartbeatMs: true,
  maxClientBufferBytes: true,
  maxEventClients: true,
  assetsDirectory: true,
  logger: true,
});

export interface ResolvedDashboardOptions {
  readonly backend: DashboardBackend;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly allowedHosts: readonly string[];
  readonly allowedOrigins: readonly string[];
  readonly maxBodyBytes: number;
  readonly outputSnapshotMaxBytes: number;
  readonly outputPageMaxBytes: number;
  readonly maxOutputStreams: number;
  readonly maxParentDepth: number;
  readonly heartbeatMs: number;
  readonly maxClientBufferBytes: number;
  readonly maxEventClients: number;
  readonly assetsDirectory: string;
  readonly logger: Logger;
}

export const DASHBOARD_SERVER_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 0,
  maxBodyBytes: 16 * 1024,
  outputSnapshotMaxBytes: 8192,
  outputPageMaxBytes: 65_536,
  maxOutputStreams: 32,
  maxParentDepth: 32,
  heartbeatMs: 15_000,
  maxClientBufferBytes: 1024 * 1024,
  maxEventClients: 64,
});

/** The package's `web/` directory: `src/server` and `dist/server` both sit two levels below the root. */
export const DEFAULT_ASSETS_DIRECTORY = fileURLToPath(new URL('../../web/', import.meta.url));

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host.toLowerCase()) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** An integer option from `minimum` to `maximum`, or `fallback` when absent. */
export function integerInRange(
  field: string,
  value: unknown,
  fallback: number,
  minimum: number,
  maximum: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum || value > maximum) {
    throw new InvalidArgumentError(field, `an integer from ${minimum} to ${maximum}`, value);
  }
  return value;
}

function stringList(field: string, value: unknown): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string' || entry === '')) {
    throw new InvalidArgumentError(field, 'an array of non-empty strings', value);
  }
  return Object.freeze([...value]);
}

export function resolveDashboardOptions(options: DashboardServerOptions): ResolvedDashboardOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, DASHBOARD_SERVER_OPTION_KEYS, { where: 'createDashboardServer' });
  const backend = options.backend;
  for (const method of ['listSessions', 'getSession', 'stopBackgroundWork', 'outputSnapshot'] as const) {
    if (typeof backend?.[method] !== 'function') {
      throw new InvalidArgumentError(`backend.${method}`, 'a function', backend?.[method]);
    }
  }
  if (backend.openOutput !== undefined && typeof backend.openOutput !== 'function') {
    throw new InvalidArgumentError('backend.openOutput', 'a function', backend.openOutput);
  }
  if (typeof backend.events?.subscribe !== 'function') {
    throw new InvalidArgumentError('backend.events', 'a BackgroundEventFeed', backend.events);
  }
  const host = options.host ?? DASHBOARD_SERVER_DEFAULTS.host;
  if (typeof host !== 'string' || host === '')
    throw new InvalidArgumentError('host', 'a host name or address', host);
  if (!isLoopbackHost(host) && options.allowRemote !== true) {
    throw new InvalidArgumentError('host', 'a loopback address (or set `allowRemote: true`)', host);
  }
  const token = options.token ?? generateAccessToken();
  if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    throw new InvalidArgumentError(
      'token',
      `at least ${MIN_TOKEN_LENGTH} printable ASCII characters`,
      '(hidden)',
    );
  }
  const assetsDirectory = options.assetsDirectory ?? DEFAULT_ASSETS_DIRECTORY;
  if (typeof assetsDirectory !== 'string' || assetsDirectory === '') {
    throw new InvalidArgumentError('assetsDirectory', 'a directory path', assetsDirectory);
  }
  const logger = options.logger ?? consoleDashboardLogger;
  if (typeof logger?.warn !== 'function')
    throw new InvalidArgumentError('logger', 'an object with warn()', logger);
  const defaults = DASHBOARD_SERVER_DEFAULTS;
  return {
    backend,
    host,
    port: integerInRange('port', options.port, defaults.port, 0, 65_535),
    token,
    allowedHosts: stringList('allowedHosts', options.allowedHosts),
    allowedOrigins: stringList('allowedOrigins', options.allowedOrigins),
    maxBodyBytes: integerInRange(
      'maxBodyBytes',
      options.maxBodyBytes,
      defaults.maxBodyBytes,
      64,
      16 * 1024 * 1024,
    ),
    outputSnapshotMaxBytes: integerInRange(
      'outputSnapshotMaxBytes',
      options.outputSnapshotMaxBytes,
      defaults.outputSnapshotMaxBytes,
      1,
      8192,
    ),
    outputPageMaxBytes: integerInRange(
      'outputPageMaxBytes',
      options.outputPageMaxBytes,
      defaults.outputPageMaxBytes,
      4,
      1024 * 1024,
    ),
    maxOutputStreams: integerInRange(
      'maxOutputStreams',
      options.maxOutputStreams,
      defaults.maxOutputStreams,
      1,
      10_000,
    ),
    maxParentDepth: integerInRange(
      'maxParentDepth',
      options.maxParentDepth,
      defaults.maxParentDepth,
      0,
      1024,
    ),
    heartbeatMs: integerInRange('heartbeatMs', options.heartbeatMs, defaults.heartbeatMs, 1, 3_600_000),
    maxClientBufferBytes: integerInRange(
      'maxClientBufferBytes',
      options.maxClientBufferBytes,
      defaults.maxClientBufferBytes,
      1024,
      1024 * 1024 * 1024,
    ),
    maxEventClients: integerInRange(
      'maxEventClients',
      options.maxEventClients,
      defaults.maxEventClients,
      1,
      100_000,
    ),
    assetsDirectory,
    logger,
  };
}
