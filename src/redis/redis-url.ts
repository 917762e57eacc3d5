/**
 * Redis URLs: only `redis://` and `rediss://` (TLS), checked before anything connects, and redacted
 * wherever they or their parts could reach a message: credentials never reach a log, an error or a
 * detail.
 */
import { InvalidArgumentError } from '../tasks/errors.js';

/** A checked Redis URL: the URL itself (secret), and what may be shown of it. */
export interface RedisTarget {
  readonly url: string;
  /** The URL with its user and password replaced by `***`: safe to log. */
  readonly redacted: string;
  readonly tls: boolean;
  /** Secrets to scrub from any text that might quote them (the password, the user, the whole URL). */
  readonly secrets: readonly string[];
}

/** Checks `url` (field `field`) and describes it. Throws `INVALID_ARGUMENT` naming only the redacted form. */
export function parseRedisUrl(url: unknown, field = 'redis.url'): RedisTarget {
  if (typeof url !== 'string' || url === '') {
    throw new InvalidArgumentError(field, 'a redis:// or rediss:// URL', url);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidArgumentError(field, 'a redis:// or rediss:// URL', redactRedisUrl(url));
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new InvalidArgumentError(field, 'a redis:// or rediss:// URL', redactRedisUrl(url));
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

/** The URL with any user and password replaced by `***` (a string that is not a URL is fully hidden). */
export function redactRedisUrl(url: string): string {
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
