/**
 * The options of `createPersonNotifier`: the event feed, the three sinks (each with its filters and its
 * rate limit) and the bounds. One declaration with the defaults; docs/limits.md lists the bounds.
 */
import type { BackgroundEventFeed } from '../events/index.js';
import { InvalidArgumentError, systemClock } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import { PERSON_NOTICE_EVENTS } from './person-notice.js';

/** The shortest webhook key accepted. */
export const MIN_WEBHOOK_SECRET_LENGTH = 16;

function isWebhookUrl(value: unknown, path: string): boolean {
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw new InvalidArgumentError(
      path,
      'an http: or https: URL',
      typeof value === 'string' ? '(not a URL)' : value,
    );
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || typeof value !== 'string') {
    throw new InvalidArgumentError(path, 'an http: or https: URL', url.protocol);
  }
  return true;
}

/** A key is long enough; a bad one is never echoed (messages and logs name it `(hidden)`). */
function isSecret(value: unknown, path: string): boolean {
  if (typeof value !== 'string' || value.length < MIN_WEBHOOK_SECRET_LENGTH) {
    throw new InvalidArgumentError(
      path,
      `a string of at least ${MIN_WEBHOOK_SECRET_LENGTH} characters`,
      '(hidden)',
    );
  }
  return true;
}

function isSessionList(value: unknown, path: string): boolean {
  if (!Array.isArray(value)) throw new InvalidArgumentError(path, 'an array of session ids (or null)', value);
  value.forEach((entry, index) => {
    if (entry !== null && (typeof entry !== 'string' || entry === '')) {
      throw new InvalidArgumentError(`${path}[${index}]`, 'a session id or null', entry);
    }
  });
  return true;
}

const rateLimitOptions = (perMinute: number, burst: number) =>
  defineOptions('rateLimit', {
    /** Notices refilled per minute (1 to 100000). */
    perMinute: option.integer({ min: 1, max: 100_000, default: perMinute }),
    /** Notices sent back to back (1 to 100000). */
    burst: option.integer({ min: 1, max: 100_000, default: burst }),
  });

/** The filter every sink takes. */
const filterRules = {
  /** The events this sink takes (`task-ended`, `task-failed`, `monitor-match`, `input-needed`). Default: all. */
  events: option.list(option.oneOf(PERSON_NOTICE_EVENTS)),
  /** The sessions whose work it reports (`null`: ownerless work). Default: every session. */
  sessions: option.custom<readonly (string | null)[]>('an array of session ids (or null)', isSessionList),
  /** The display kinds it reports (`bash`, `subagent`, `workflow`, `monitor`, `other`). Default: all. */
  kinds: option.list(option.string()),
};

export const webhookOptions = defineOptions('webhook', {
  /** Where notices are POSTed (http: or https:). Required. */
  url: option.required(option.custom<string>('an http: or https: URL', isWebhookUrl)),
  /** The HMAC-SHA256 key (at least 16 characters). Required; never logged, never shown. */
  secret: option.required(option.custom<string>('a secret', isSecret)),
  ...filterRules,
  /** Notices waiting (queued or between attempts); one more is dropped. 1 to 100000. Default 1000. */
  maxQueue: option.integer({ min: 1, max: 100_000, default: 1000 }),
  /** Attempts per notice, the first included. 1 to 100. Default 6. */
  maxAttempts: option.integer({ min: 1, max: 100, default: 6 }),
  /** The first back-off's ceiling; each retry doubles it (full jitter). Default 500 ms. */
  initialBackoffMs: option.integer({ min: 1, max: 3_600_000, default: 500 }),
  /** The longest back-off (and the most a `Retry-After` is honoured). Default 60000 ms. */
  maxBackoffMs: option.integer({ min: 1, max: 86_400_000, default: 60_000 }),
  /** One request's limit before it counts as failed (`TIMEOUT`). Default 10000 ms. */
  timeoutMs: option.integer({ min: 1, max: 600_000, default: 10_000 }),
  /** Requests in flight at once. 1 to 64. Default 4. */
  concurrency: option.integer({ min: 1, max: 64, default: 4 }),
  /** Default 60 a minute, bursts of 20. */
  rateLimit: option.nested(rateLimitOptions(60, 20)),
});

export const desktopOptions = defineOptions('desktop', {
  ...filterRules,
  /** Where `notify-send` is looked for. Default: `PATH`. */
  searchPath: option.string({ nonEmpty: false, fallback: () => process.env.PATH ?? '' }),
  /** Notices waiting for the program; one more is dropped. 1 to 10000. Default 50. */
  maxQueue: option.integer({ min: 1, max: 10_000, default: 50 }),
  /** How long one `notify-send` may take before it is killed. Default 5000 ms. */
  timeoutMs: option.integer({ min: 1, max: 600_000, default: 5000 }),
  /** Default 12 a minute, bursts of 5. */
  rateLimit: option.nested(rateLimitOptions(12, 5)),
});

export const browserOptions = defineOptions('browser', {
  ...filterRules,
  /** Default 30 a minute, bursts of 10. */
  rateLimit: option.nested(rateLimitOptions(30, 10)),
});

export const personNotifierOptions = defineOptions('createPersonNotifier', {
  /** The background events the notices come from (a runtime's `events`, a dashboard backend's). */
  feed: option.required(option.shaped<BackgroundEventFeed>('a BackgroundEventFeed', ['subscribe'])),
  /** The webhook sink; off unless given. */
  webhook: option.nested(webhookOptions, { optional: true }),
  /** The desktop sink (`notify-send`); `true` turns it on with its defaults. Default off. */
  desktop: option.orFalse(
    option.custom<Record<string, unknown> | true, ResolvedOptions<typeof desktopOptions.rules>>(
      'an object or true',
      (value) => value === true || (typeof value === 'object' && value !== null),
      {
        convert: (value, path, where) => desktopOptions.resolve(value === true ? {} : value, { where, path }),
      },
    ),
    { default: false },
  ),
  /** The dashboard page's browser notifications. Default on (the page still asks the person first). */
  browser: option.orFalse(option.nested(browserOptions)),
  /** A running pty quiet this long after output is reported as waiting for input. Default 10000 ms. */
  inputQuietMs: option.integer({ min: 1, max: 86_400_000, default: 10_000 }),
  /** Notices the "what was sent" view keeps. 1 to 100000. Default 200. */
  sentLogSize: option.integer({ min: 1, max: 100_000, default: 200 }),
  /** Task ends remembered to send each once. 16 to 1000000. Default 10000. */
  maxRememberedEnds: option.integer({ min: 16, max: 1_000_000, default: 10_000 }),
  clock: option.clock({ default: systemClock }),
  /** [0, 1): the back-off's jitter. Default `Math.random`. */
  random: option.func<() => number>({ default: Math.random }),
  logger: option.logger(),
});

export type PersonNotifierOptions = OptionsInput<typeof personNotifierOptions.rules>;
export type ResolvedPersonNotifierOptions = ResolvedOptions<typeof personNotifierOptions.rules>;
export type WebhookOptions = OptionsInput<typeof webhookOptions.rules>;
export type DesktopOptions = OptionsInput<typeof desktopOptions.rules>;
export type BrowserOptions = OptionsInput<typeof browserOptions.rules>;

/** The fixed defaults. */
export const PERSON_NOTIFIER_DEFAULTS = personNotifierOptions.defaults;
