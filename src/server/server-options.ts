/** Options of the dashboard server: one declaration with their defaults and their validation. */
import { fileURLToPath } from 'node:url';
import type { PersonNotifier } from '../notify-person/index.js';
import { createConsoleLogger, InvalidArgumentError, type Logger } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import { generateAccessToken, MIN_TOKEN_LENGTH } from './access-token.js';
import type { DashboardBackend } from './dashboard-backend.js';

export const consoleDashboardLogger: Logger = createConsoleLogger('errand dashboard');

/** The package's `web/` directory: `src/server` and `dist/server` both sit two levels below the root. */
export const DEFAULT_ASSETS_DIRECTORY = fileURLToPath(new URL('../../web/', import.meta.url));

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host.toLowerCase()) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

const BACKEND_METHODS = ['listSessions', 'getSession', 'stopBackgroundWork', 'outputSnapshot'] as const;

/** A backend has its four methods and an event feed; a missing one is named. */
function isBackend(value: unknown, path: string): boolean {
  const backend = value as Partial<DashboardBackend> | null;
  if (typeof backend !== 'object' || backend === null) return false;
  for (const method of BACKEND_METHODS) {
    if (typeof backend[method] !== 'function') {
      throw new InvalidArgumentError(`${path}.${method}`, 'a function', backend[method]);
    }
  }
  if (backend.openOutput !== undefined && typeof backend.openOutput !== 'function') {
    throw new InvalidArgumentError('backend.openOutput', 'a function', backend.openOutput);
  }
  if (typeof backend.events?.subscribe !== 'function') {
    throw new InvalidArgumentError(`${path}.events`, 'a BackgroundEventFeed', backend.events);
  }
  return true;
}

/** A token is long enough and printable; a bad one is not echoed. */
function isToken(value: unknown, path: string): boolean {
  if (typeof value !== 'string' || value.length < MIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(value)) {
    throw new InvalidArgumentError(
      path,
      `at least ${MIN_TOKEN_LENGTH} printable ASCII characters`,
      '(hidden)',
    );
  }
  return true;
}

/** The options of `createDashboardServer`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const dashboardServerOptions = defineOptions(
  'createDashboardServer',
  {
    backend: option.required(option.custom<DashboardBackend>('a DashboardBackend', isBackend)),
    /** The interface to bind. Default `127.0.0.1`. Anything not loopback needs `allowRemote`. */
    host: option.string({ default: '127.0.0.1' }),
    /** The port; 0 picks a free one. Default 0. */
    port: option.integer({ min: 0, max: 65_535, default: 0 }),
    /** Binding a non-loopback interface exposes the dashboard to the network (token still required). Default false. */
    allowRemote: option.boolean({ default: false }),
    /** The access token (at least 32 characters). Default: 32 random bytes, base64url. */
    token: option.custom<string>('a token', isToken, { fallback: generateAccessToken }),
    /**
     * Extra `Host` names accepted besides localhost, 127.0.0.1, [::1] and `host` (guards DNS rebinding).
     * With `allowRemote`, list the names clients reach the server by. Default none.
     */
    allowedHosts: option.list(option.string(), { default: [] }),
    /** Extra origins allowed to send commands besides the server's own (e.g. `https://dash.example`). Default none. */
    allowedOrigins: option.list(option.string(), { default: [] }),
    /** The largest command body accepted, 64 bytes to 16 MiB. Default 16384 bytes. */
    maxBodyBytes: option.integer({ min: 64, max: 16 * 1024 * 1024, default: 16 * 1024 }),
    /**
     * Bytes of an oversized body read and thrown away before its 400 (sent with `Connection: close`), so the
     * answer reaches a client that is still sending (closing on unread bytes resets the connection and
     * loses it). A body that goes on past `maxBodyBytes` plus this gets its 400 then, and the connection
     * lingers (`lingerMs`, at most this many bytes more) before it closes. 0 to 1 GiB. Default 16 MiB.
     */
    maxDiscardBytes: option.integer({ min: 0, max: 1024 * 1024 * 1024, default: 16 * 1024 * 1024 }),
    /** How long such a connection lingers after its 400, reading and discarding, 0 to 60000 ms. Default 2000. */
    lingerMs: option.integer({ min: 0, max: 60_000, default: 2000 }),
    /** Bytes of an output snapshot. Default (and maximum) 8192. */
    outputSnapshotMaxBytes: option.integer({ min: 1, max: 8192, default: 8192 }),
    /**
     * The most bytes of output one page (`GET …/output?from=`) or one stream event carries (4 to 1048576;
     * at most the task service's `maxCursorReadBytes`). Default 65536.
     */
    outputPageMaxBytes: option.integer({ min: 4, max: 1024 * 1024, default: 65_536 }),
    /** Concurrent live output streams (`GET …/output/stream`), 1 to 10000; more are refused with 503. Default 32. */
    maxOutputStreams: option.integer({ min: 1, max: 10_000, default: 32 }),
    /** Sessions walked up the parent chain looking for a work's output, 0 to 1024. Default 32. */
    maxParentDepth: option.integer({ min: 0, max: 1024, default: 32 }),
    /** Heartbeat comments on event streams keep proxies and idle timers from closing them. Default 15000 ms. */
    heartbeatMs: option.integer({ min: 1, max: 3_600_000, default: 15_000 }),
    /**
     * Unsent bytes one event-stream client may hold, beyond what it was sent on connecting (its replay or
     * level), before it is dropped; it reconnects and resumes. 1 KiB to 1 GiB. Default 1 MiB.
     */
    maxClientBufferBytes: option.integer({ min: 1024, max: 1024 * 1024 * 1024, default: 1024 * 1024 }),
    /**
     * Concurrent event-stream clients (open dashboard pages, each holds one); one more is refused with 503
     * `TOO_MANY_EVENT_CLIENTS`, whose message names this option. 1 to 100000. Default 64.
     */
    maxEventClients: option.integer({ min: 1, max: 100_000, default: 64 }),
    /**
     * Sessions `GET /api/sessions` lists, in its order (running work first, then live, then ended; newest
     * first within each): the rest are only counted, in `omitted`. 1 to 100000. Default 500.
     */
    maxListedSessions: option.integer({ min: 1, max: 100_000, default: 500 }),
    /** The most messages one conversation page may hold (a larger `limit` is refused). 1 to 1000. Default 200. */
    maxConversationPage: option.integer({ min: 1, max: 1000, default: 200 }),
    /** Messages a conversation page holds when the request names no `limit`. Default 50. */
    conversationPageSize: option.integer({ min: 1, default: 50, atMost: 'maxConversationPage' }),
    /** Bytes of a message's text a conversation page shows (its head). 64 to 1 MiB. Default 4096. */
    maxMessageTextBytes: option.integer({ min: 64, max: 1024 * 1024, default: 4096 }),
    /** Bytes of a tool result a conversation page shows (its head). 64 to 1 MiB. Default 1024. */
    maxToolResultBytes: option.integer({ min: 64, max: 1024 * 1024, default: 1024 }),
    /**
     * The notifications for the person (`createPersonNotifier`, a runtime's `personNotifier`): the page's
     * browser notifications come through its event stream (`event: notice`), and `GET /api/notices` shows
     * what was sent. Absent: the page offers no notifications and the endpoint answers `enabled: false`.
     */
    notices: option.shaped<PersonNotifier>('a PersonNotifier', ['sent', 'subscribeBrowser']),
    /** The directory holding the page (`index.html`, `app.js`, `app.css`). Default: the package's `web/`. */
    assetsDirectory: option.string({ default: DEFAULT_ASSETS_DIRECTORY }),
    /** Told about failed requests, failed stops and dropped clients. Default: `consoleDashboardLogger`. */
    logger: option.logger({ default: consoleDashboardLogger }),
  },
  {
    check({ host, allowRemote }, path) {
      if (!isLoopbackHost(host) && !allowRemote) {
        throw new InvalidArgumentError(path('host'), 'a loopback address (or set `allowRemote: true`)', host);
      }
    },
  },
);

/** Options of `createDashboardServer`. */
export type DashboardServerOptions = OptionsInput<typeof dashboardServerOptions.rules>;
export type ResolvedDashboardOptions = ResolvedOptions<typeof dashboardServerOptions.rules>;

/** The fixed defaults of `DashboardServerOptions`. */
export const DASHBOARD_SERVER_DEFAULTS = dashboardServerOptions.defaults;
