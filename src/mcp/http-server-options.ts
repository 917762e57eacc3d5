/** Options of `startHttpMcpServer` (`errand mcp --http`): one declaration with defaults and validation. */
import { generateAccessToken, isLoopbackHost } from '../server/index.js';
import { InvalidArgumentError, MAX_TIMER_DELAY_MS, systemClock } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import { mcpRuntimeOptions } from './mcp-runtime.js';
import { errandMcpServerOptions } from './mcp-server-options.js';

/** A bearer token is long and printable; a bad one is never echoed. */
function isToken(value: unknown, path: string): boolean {
  if (typeof value !== 'string' || value.length < 32 || !/^[\x21-\x7e]+$/.test(value)) {
    throw new InvalidArgumentError(path, 'at least 32 printable ASCII characters', '(hidden)');
  }
  return true;
}

export const httpMcpServerOptions = defineOptions('startHttpMcpServer', {
  ...errandMcpServerOptions.omit('runtime', 'resumeSessionId').rules,
  /** Options of the runtime the server creates (its store's `home`, limits, producers). */
  runtime: option.nested(mcpRuntimeOptions),
  /** The interface to bind. Default `127.0.0.1`; anything not loopback needs a token. */
  host: option.string({ default: '127.0.0.1' }),
  /** The port; 0 picks a free one. Default 0. */
  port: option.integer({ min: 0, max: 65_535, default: 0 }),
  /**
   * The bearer token every request must carry (`Authorization: Bearer <token>`), at least 32 characters;
   * or false for none, which only a loopback `host` may use. Default: 32 random bytes, base64url.
   */
  token: option.orFalse(option.custom<string>('a token', isToken, { fallback: generateAccessToken })),
  /** Where to write the token (mode 0600), replacing the file. Default: nowhere. */
  tokenFile: option.string(),
  /** Extra `Host` names accepted besides loopback and `host` (against DNS rebinding). Default none. */
  allowedHosts: option.list(option.string(), { default: [] }),
  /** Browser origins allowed besides the server's own. Default none. */
  allowedOrigins: option.list(option.string(), { default: [] }),
  /**
   * MCP sessions (2025-11-25 and earlier clients, one `Mcp-Session-Id` each) open at once; an
   * `initialize` beyond them is refused with 503. Each is an Errand session of its own. Default 16.
   */
  maxSessions: option.integer({ min: 1, max: 10_000, default: 16 }),
  /** A session no request touched for this long is closed (its tasks stopped). Default 1800000 ms. */
  sessionIdleMs: option.integer({ min: 1_000, max: MAX_TIMER_DELAY_MS, default: 30 * 60_000 }),
  /** The largest request body, in bytes. Default 4194304 (4 MiB). */
  maxBodyBytes: option.integer({ min: 1_024, max: 64 * 1024 * 1024, default: 4 * 1024 * 1024 }),
  /** `subscriptions/listen` streams (2026-07-28 clients) open at once. Default 64. */
  maxListeners: option.integer({ min: 1, max: 10_000, default: 64 }),
  /** SSE keep-alive comment interval on long-lived streams. Default 15000 ms. */
  keepAliveMs: option.integer({ min: 100, max: MAX_TIMER_DELAY_MS, default: 15_000 }),
  /** Epoch-milliseconds clock (idle expiry). Default: the system clock. */
  now: option.func({ default: systemClock.now }),
});

/** Options of `startHttpMcpServer`. */
export type HttpMcpServerOptions = OptionsInput<typeof httpMcpServerOptions.rules>;
export type ResolvedHttpMcpServerOptions = ResolvedOptions<typeof httpMcpServerOptions.rules>;

/** The fixed defaults of `HttpMcpServerOptions`. */
export const HTTP_MCP_SERVER_DEFAULTS = httpMcpServerOptions.defaults;

/** Refuses a configuration that would expose commands to the network without a token. */
export function checkExposure(host: string, token: string | false): void {
  if (token === false && !isLoopbackHost(host)) {
    throw new InvalidArgumentError(
      'token',
      `a token when binding ${JSON.stringify(host)} (not loopback): anyone who reaches it could run commands`,
      false,
    );
  }
}
