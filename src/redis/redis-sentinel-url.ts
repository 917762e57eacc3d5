/**
 * `redis+sentinel://` URLs: a deployment whose Redis fails over under Redis Sentinel. The URL names the
 * sentinels and the master group; connections ask the sentinels for the group's primary and follow it
 * when a replica is promoted. Checked before anything connects; a malformed one is refused with
 * `REDIS_SENTINEL_URL_INVALID`, naming the field, the URL redacted and what is wrong with it.
 *
 *   redis+sentinel://[user:password@]host[:port][,host[:port]…]/<master name>[/<db>]
 *
 * The user and password are the Redis servers' (the primary's and its replicas'); the sentinels are
 * reached without one. A sentinel's port defaults to 26379.
 */
import { ErrandError } from '../tasks/index.js';

export const SENTINEL_SCHEME = 'redis+sentinel:';
export const DEFAULT_SENTINEL_PORT = 26379;

/** What ioredis needs to reach a primary through its sentinels (`new Redis({ sentinels, name, … })`). */
export interface SentinelConnection {
  readonly sentinels: readonly { readonly host: string; readonly port: number }[];
  /** The master group's name, as the sentinels monitor it. */
  readonly name: string;
  readonly username?: string;
  readonly password?: string;
  readonly db?: number;
}

export class RedisSentinelUrlError extends ErrandError {
  constructor(field: string, redacted: string, problem: string) {
    super(
      'REDIS_SENTINEL_URL_INVALID',
      'caller',
      `Expected \`${field}\` to be a redis+sentinel://[user:password@]host[:port][,host[:port]…]/<master name>[/<db>] URL, got \`${redacted}\`: ${problem}`,
      { context: { field, value: redacted, problem } },
    );
  }
}

/** Whether `url` asks for Sentinel (its scheme ends in `+sentinel`, a supported one or not). */
export function isSentinelUrl(url: string): boolean {
  return /^[a-z][a-z0-9.-]*\+sentinel:\/\//i.test(url);
}

/** The URL with any user and password replaced by `***` (the authority's last `@` ends them). */
export function redactSentinelUrl(url: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*:\/\/)/i.exec(url)?.[1];
  if (scheme === undefined) return '(an unparsable URL, not shown)';
  const rest = url.slice(scheme.length);
  const slash = rest.indexOf('/');
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const at = authority.lastIndexOf('@');
  if (at < 0) return url;
  const colon = authority.slice(0, at).indexOf(':');
  const userinfo = colon >= 0 ? `${colon > 0 ? '***' : ''}:***` : '***';
  return `${scheme}${userinfo}${rest.slice(at)}`;
}

const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/;
const MASTER_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** Parses a `redis+sentinel://` URL (field `field`), or throws `REDIS_SENTINEL_URL_INVALID`. */
export function parseSentinelUrl(url: string, field: string): SentinelConnection {
  const redacted = redactSentinelUrl(url);
  const fail = (problem: string): never => {
    throw new RedisSentinelUrlError(field, redacted, problem);
  };
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (`${scheme}:` !== SENTINEL_SCHEME) {
    fail(`the scheme must be redis+sentinel (TLS to sentinels is not supported)`);
  }
  const rest = url.slice(`${SENTINEL_SCHEME}//`.length);
  if (/[?#]/.test(rest)) fail('query strings and fragments are not supported');
  const slash = rest.indexOf('/');
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash + 1) : '';
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at) : undefined;
  const hostList = at >= 0 ? authority.slice(at + 1) : authority;
  if (hostList === '') fail('it names no sentinel');
  const sentinels = hostList.split(',').map((entry) => {
    const match = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(entry);
    const host = match?.[1] ?? '';
    if (host === '' || !HOST.test(host)) fail(`\`${entry}\` is not a host[:port]`);
    const portText = match?.[2];
    const port = portText === undefined ? DEFAULT_SENTINEL_PORT : Number(portText);
    if (portText === '' || !Number.isInteger(port) || port < 1 || port > 65_535) {
      fail(`\`${entry}\` has no port from 1 to 65535`);
    }
    return Object.freeze({ host: host.replace(/^\[|\]$/g, ''), port });
  });
  const [name, db, ...extra] = path.split('/');
  if (name === undefined || name === '') fail('it names no master group (…/<master name>)');
  if (!MASTER_NAME.test(name!)) fail(`the master name must be letters, digits, _ . - (1 to 128)`);
  if (extra.length > 0 || (db !== undefined && !/^\d{1,5}$/.test(db))) {
    fail('after the master name only a database number may follow (…/<master name>/<db>)');
  }
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    const rawUser = colon >= 0 ? userinfo.slice(0, colon) : userinfo;
    const rawPassword = colon >= 0 ? userinfo.slice(colon + 1) : '';
    try {
      username = rawUser === '' ? undefined : decodeURIComponent(rawUser);
      password = rawPassword === '' ? undefined : decodeURIComponent(rawPassword);
    } catch {
      fail('its user or password is not percent-encoded correctly');
    }
  }
  return Object.freeze({
    sentinels: Object.freeze(sentinels),
    name: name!,
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(db !== undefined ? { db: Number(db) } : {}),
  });
}
