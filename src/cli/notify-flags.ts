/**
 * The command line's flags for notifying the person (`errand mcp`, `errand chat`, `errand serve`): a
 * webhook URL whose key comes from the environment (never from the command line, where `ps` shows it),
 * the desktop, an event filter, or a JSON file with every option. The key is taken out of the environment
 * once read, so the commands the model runs never inherit it.
 */
import { readFileSync } from 'node:fs';
import type { PersonNotifierOptions } from '../notify-person/index.js';
// From its file, not the folder's index: `errand mcp` parses its flags before loading the runtime.
import { PERSON_NOTICE_EVENTS, type PersonNoticeEvent } from '../notify-person/notice-events.js';
import { type FlagSpecs, UsageError } from './args.js';

/** The environment variable holding the webhook's HMAC key. */
export const WEBHOOK_SECRET_VARIABLE = 'ERRAND_NOTIFY_WEBHOOK_SECRET';

export const NOTIFY_FLAGS: FlagSpecs = {
  'notify-webhook': {
    type: 'string',
    placeholder: '<url>',
    description: `POST a signed JSON notice to this URL when background work ends, fails, matches a monitor or waits for input; the HMAC key is read from $${WEBHOOK_SECRET_VARIABLE}`,
  },
  'notify-desktop': {
    type: 'boolean',
    description: 'show desktop notifications through notify-send (libnotify), when it is on PATH',
  },
  'notify-events': {
    type: 'string',
    placeholder: '<list>',
    description: `the notices to send, comma-separated: ${PERSON_NOTICE_EVENTS.join(', ')} (default: all)`,
  },
  'notify-config': {
    type: 'path',
    placeholder: '<file>',
    description:
      'a JSON file of notification options (webhook, desktop, browser, filters, rate limits; docs/person-notifications.md)',
  },
};

/** The `notifyPerson` options the flags ask for; undefined when none was given (and `always` is false). */
export function notifyOptionsFromFlags(
  values: Readonly<Record<string, unknown>>,
  environment: NodeJS.ProcessEnv = process.env,
  settings: {
    /** Build the options even without a flag (a dashboard's page offers browser notifications). */
    readonly always?: boolean;
    /** Whether a dashboard page can show the browser sink's notices; without one it is off unless configured. */
    readonly browser?: boolean;
  } = {},
): Omit<PersonNotifierOptions, 'feed'> | undefined {
  const url = values['notify-webhook'];
  const desktop = values['notify-desktop'] === true;
  const eventsFlag = values['notify-events'];
  const configPath = values['notify-config'];
  const given = url !== undefined || desktop || eventsFlag !== undefined || configPath !== undefined;
  const secret = environment[WEBHOOK_SECRET_VARIABLE];
  // Read once, then out of the environment: no command started later sees it.
  delete environment[WEBHOOK_SECRET_VARIABLE];
  if (!given && settings.always !== true) return undefined;
  let options: Record<string, unknown> = {};
  if (typeof configPath === 'string') options = readConfigFile(configPath);
  const events = typeof eventsFlag === 'string' ? parseEvents(eventsFlag) : undefined;
  if (typeof url === 'string') {
    if (secret === undefined || secret === '') {
      throw new UsageError(`\`--notify-webhook\` needs its HMAC key in $${WEBHOOK_SECRET_VARIABLE}`);
    }
    options = { ...options, webhook: { ...asRecord(options.webhook), url, secret } };
  } else if (secret !== undefined && isRecord(options.webhook) && options.webhook.secret === undefined) {
    options = { ...options, webhook: { ...options.webhook, secret } };
  }
  if (desktop) options = { ...options, desktop: isRecord(options.desktop) ? options.desktop : true };
  // No page to show them: the browser sink would only record every notice as dropped.
  if (settings.browser === false && options.browser === undefined) options = { ...options, browser: false };
  if (events !== undefined) {
    for (const sink of ['webhook', 'desktop', 'browser'] as const) {
      const current = options[sink];
      if (current === false) continue;
      if (sink !== 'browser' && current === undefined) continue;
      options[sink] = { ...(current === true ? {} : asRecord(current)), events };
    }
  }
  return options as Omit<PersonNotifierOptions, 'feed'>;
}

function parseEvents(list: string): PersonNoticeEvent[] {
  const events = list
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const event of events) {
    if (!(PERSON_NOTICE_EVENTS as readonly string[]).includes(event)) {
      throw new UsageError(
        `Expected \`--notify-events\` to list ${PERSON_NOTICE_EVENTS.join(', ')}, got ${JSON.stringify(event)}`,
      );
    }
  }
  return events as PersonNoticeEvent[];
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(
      `\`--notify-config\` ${JSON.stringify(path)} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // The file may hold the key: its text is never echoed.
    throw new UsageError(`\`--notify-config\` ${JSON.stringify(path)} is not valid JSON`);
  }
  if (!isRecord(parsed))
    throw new UsageError(`\`--notify-config\` ${JSON.stringify(path)} must hold a JSON object`);
  return parsed;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asRecord(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}
