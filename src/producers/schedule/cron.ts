/**
 * A small five-field cron expression (`minute hour day-of-month month day-of-week`) evaluated in an IANA
 * time zone. Fields take `*`, numbers, ranges `a-b`, steps `*\/n` and `a-b/n`, and lists `a,b`; day of
 * week is 0-7 (0 and 7 are Sunday); `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly` are shorthands.
 * As in classic cron, when both day fields are restricted a day matching either one matches.
 *
 * The next firing is found by walking forward in UTC minutes and reading the wall clock of the zone at
 * each step, skipping whole days and hours that cannot match: a wall-clock time a DST change skips never
 * fires, and one it repeats fires once (the first).
 */
import { ErrandError } from '../../tasks/index.js';

export class InvalidCronError extends ErrandError {
  constructor(expression: string, reason: string) {
    super(
      'INVALID_CRON',
      'caller',
      `Expected \`cron\` to be a five-field cron expression: ${reason} (got ${JSON.stringify(expression)})`,
      {
        context: { field: 'cron', value: expression, reason },
      },
    );
  }
}

export class InvalidTimeZoneError extends ErrandError {
  constructor(timeZone: string) {
    super(
      'INVALID_TIME_ZONE',
      'caller',
      `Expected \`time_zone\` to be an IANA time zone such as "Europe/Berlin", got ${JSON.stringify(timeZone)}`,
      {
        context: { field: 'time_zone', value: timeZone },
      },
    );
  }
}

export interface CronExpression {
  readonly source: string;
  readonly timeZone: string;
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly days: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  readonly weekdays: ReadonlySet<number>;
  readonly daysRestricted: boolean;
  readonly weekdaysRestricted: boolean;
}

const SHORTHANDS: Readonly<Record<string, string>> = {
  '@hourly': '0 * * * *',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@weekly': '0 0 * * 0',
  '@monthly': '0 0 1 * *',
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
};

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7 },
] as const;

function parseField(text: string, field: (typeof FIELDS)[number], expression: string): Set<number> {
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const match = /^(\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(part);
    if (match === null) throw new InvalidCronError(expression, `the ${field.name} field has "${part}"`);
    const step = match[4] === undefined ? 1 : Number(match[4]);
    let low: number = field.min;
    let high: number = field.max;
    if (match[1] !== '*') {
      low = Number(match[2]);
      high = match[3] === undefined ? (match[4] === undefined ? low : field.max) : Number(match[3]);
    }
    if (step < 1 || low < field.min || high > field.max || low > high) {
      throw new InvalidCronError(
        expression,
        `the ${field.name} field "${part}" is outside ${field.min}-${field.max} or has a zero step`,
      );
    }
    for (let value = low; value <= high; value += step) values.add(value);
  }
  return values;
}

/** Checks that `timeZone` is one the runtime knows; throws `INVALID_TIME_ZONE`. */
export function validateTimeZone(timeZone: string): string {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone }).format(0);
    return timeZone;
  } catch {
    throw new InvalidTimeZoneError(timeZone);
  }
}

export function parseCron(expression: string, timeZone = 'UTC'): CronExpression {
  if (typeof expression !== 'string' || expression.length > 200) {
    throw new InvalidCronError(
      String(expression).slice(0, 200),
      'it must be a string of at most 200 characters',
    );
  }
  const expanded = SHORTHANDS[expression.trim().toLowerCase()] ?? expression.trim();
  const parts = expanded.split(/\s+/);
  if (parts.length !== 5) throw new InvalidCronError(expression, `it has ${parts.length} fields, not 5`);
  const [minutes, hours, days, months, weekdays] = parts.map((part, index) =>
    parseField(part, FIELDS[index]!, expression),
  ) as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  if (weekdays.has(7)) {
    weekdays.delete(7);
    weekdays.add(0);
  }
  return {
    source: expression,
    timeZone: validateTimeZone(timeZone),
    minutes,
    hours,
    days,
    months,
    weekdays,
    daysRestricted: parts[2] !== '*',
    weekdaysRestricted: parts[4] !== '*',
  };
}

interface WallClock {
  readonly month: number;
  readonly day: number;
  readonly weekday: number;
  readonly hour: number;
  readonly minute: number;
}

const WEEKDAYS: Readonly<Record<string, number>> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };
const formatters = new Map<string, Intl.DateTimeFormat>();

function wallClock(epochMs: number, timeZone: string): WallClock {
  let format = formatters.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      month: 'numeric',
      day: 'numeric',
      weekday: 'short',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(timeZone, format);
  }
  const parts: Record<string, string> = {};
  for (const part of format.formatToParts(epochMs)) parts[part.type] = part.value;
  return {
    month: Number(parts.month),
    day: Number(parts.day),
    weekday: WEEKDAYS[parts.weekday!] ?? 0,
    hour: Number(parts.hour) % 24,
    minute: Number(parts.minute),
  };
}

function dayMatches(cron: CronExpression, clock: WallClock): boolean {
  const byDay = cron.days.has(clock.day);
  const byWeekday = cron.weekdays.has(clock.weekday);
  if (cron.daysRestricted && cron.weekdaysRestricted) return byDay || byWeekday;
  return byDay && byWeekday;
}

const MINUTE = 60_000;
/** Five years of days, the most a search walks (a `0 0 30 2 *` never matches). */
const MAX_STEPS = 5 * 366 * 24 + 60 * 24;

/** The first minute strictly after `afterMs` the expression matches, in epoch ms; undefined if none within five years. */
export function nextCronTime(cron: CronExpression, afterMs: number): number | undefined {
  let time = Math.floor(afterMs / MINUTE) * MINUTE + MINUTE;
  for (let step = 0; step < MAX_STEPS; step += 1) {
    const clock = wallClock(time, cron.timeZone);
    if (!cron.months.has(clock.month) || !dayMatches(cron, clock)) {
      // The rest of this local day cannot match: move to its next local midnight (at most a day ahead).
      time += ((23 - clock.hour) * 60 + (60 - clock.minute)) * MINUTE;
      continue;
    }
    if (!cron.hours.has(clock.hour)) {
      time += (60 - clock.minute) * MINUTE;
      continue;
    }
    if (!cron.minutes.has(clock.minute)) {
      time += MINUTE;
      continue;
    }
    return time;
  }
  return undefined;
}
