/**
 * Redis URLs: only `redis://`, `rediss://` (TLS) and `redis+sentinel://` (a primary found and followed
 * through its sentinels: `redis-sentinel-url.ts`), checked before anything connects, and redacted
 * wherever they or their parts could reach a message: credentials never reach a log, an error or a
 * detail.
 */
import { InvalidArgumentError } from '../tasks/errors.js';
import {
  isSentinelUrl,
  parseSentinelUrl,
  redactSentinelUrl,
  type SentinelConnection,
} from './redis-sentinel-url.js';

/** A checked Redis URL: the URL itself (secret), and what may be shown of it. */
export interface RedisTarget {
  readonly url: string;
  /** The URL with its user and password replaced by `***`: safe to log. */
  readonly redacted: string;
  readonly tls: boolean;
  /** For a `redis+sentinel://` URL: the sentinels and the master group to connect through. */
  readonly sentinel?: SentinelConnection;
  /** Secrets to scrub from any text that might quote them (the password, the user, the whole URL). */
  readonly secrets: readonly string[];
}

/** Checks `url` (field `field`) and describes it. Throws `INVALID_ARGUMENT` naming only the redacted form. */
export function parseRedisUrl(url: unknown, field = 'redis.url'): RedisTarget {
  if (typeof url !== 'string' || url === '') {
    throw new InvalidArgumentError(field, 'a redis://, rediss:// or redis+sentinel:// URL', url);
  }
  if (isSentinelUrl(url)) {
    // Throws REDIS_SENTINEL_URL_INVALID itself, naming the URL only in its redacted form.
    const sentinel = parseSentinelUrl(url, field);
    return Object.freeze({
      url,
      redacted: redactSentinelUrl(url),
      tls: false,
      sentinel,
      secrets: secretsOf(url, sentinel.password, sentinel.username),
    });
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArgumentError(
      field,
      'a redis://, rediss:// or redis+sentinel:// URL',
      redactRedisUrl(url),
    );
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new InvalidArgumentError(
      field,
      'a redis://, rediss:// or redis+sentinel:// URL',
      redactRedisUrl(url),
    );
  }
  if (parsed.hostname === '') {
    throw new InvalidArgumentError(field, 'a Redis URL with a host', redactRedisUrl(url));
  }
  const secrets = [url];
  if (parsed.password !== '') secrets.push(parsed.password, decodeURIComponent(parsed.password));
  if (parsed.username !== '') secrets.push(parsed.username, decodeURIComponent(parsed.username));
  return Object.freeze({
    url,
    redacted: redactRedisUrl(url),
    tls: parsed.protocol === 'rediss:',
    secrets: Object.freeze(secrets.filter((secret) => secret.length >= 3)),
  });
}

function secretsOf(url: string, ...parts: (string | undefined)[]): readonly string[] {
  const secrets = [url];
  for (const part of parts) {
    if (part === undefined) continue;
    secrets.push(part, encodeURIComponent(part));
  }
  return Object.freeze(secrets.filter((secret) => secret.length >= 3));
}

/** The URL with any user and password replaced by `***` (a string that is not a URL is fully hidden). */
export function redactRedisUrl(url: string): string {
  if (isSentinelUrl(url)) return redactSentinelUrl(url);
  try {
    const parsed = new URL(url);
    if (parsed.username !== '') parsed.username = '***';
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(an unparsable URL, not shown)';
  }
}

/** `text` with every secret of `target` replaced by `***`. */
export function scrubSecrets(text: string, target: RedisTarget): string {
  let scrubbed = text;
  // The longest first: the whole URL before the password inside it.
  for (const secret of [...target.secrets].sort((a, b) => b.length - a.length)) {
    scrubbed = scrubbed.split(secret).join('***');
  }
  return scrubbed;
}
