/**
 * The resource-limit flags `errand mcp` and `errand chat` share: each command's own limits
 * (`--memory-limit 512M`, `--cpu-time-limit 60s`, `--cpus 0.5`, `--pids-limit 256`), the same for the
 * total of the session's commands (`--session-…`), and `--limits-mechanism`; read into the runtime's
 * `resourceLimits` option. A value that does not parse is a usage error naming the flag and the value.
 */
// From its file, not the folder's index: `errand mcp` parses its flags before loading the runtime.
import {
  LIMIT_MECHANISMS,
  type ResourceLimitOptions,
  type ResourceLimits,
} from '../process/limits/resource-limits.js';
import { type FlagSpecs, UsageError } from './args.js';

const SCOPES = [
  { prefix: '', whose: "each background command's" },
  { prefix: 'session-', whose: "the session's commands' total" },
] as const;

export const LIMIT_FLAGS: FlagSpecs = Object.fromEntries([
  ...SCOPES.flatMap(({ prefix, whose }) => [
    [
      `${prefix}memory-limit`,
      {
        type: 'string',
        placeholder: '<size>',
        description: `${whose} memory, e.g. 512M, 2G (default: none)`,
      },
    ],
    [
      `${prefix}cpu-time-limit`,
      {
        type: 'string',
        placeholder: '<time>',
        description: `${whose} CPU time, e.g. 90s, 5m, 1500ms; past it the command is stopped (default: none)`,
      },
    ],
    [
      `${prefix}cpus`,
      {
        type: 'string',
        placeholder: '<n>',
        description: `${whose} CPU share in CPUs, e.g. 0.5 (default: none)`,
      },
    ],
    [
      `${prefix}pids-limit`,
      { type: 'string', placeholder: '<n>', description: `${whose} processes at once (default: none)` },
    ],
  ]),
  [
    'limits-mechanism',
    {
      type: 'string',
      placeholder: '<name>',
      description: `how limits are enforced: auto, ${LIMIT_MECHANISMS.join(', ')} (default: auto)`,
    },
  ],
]);

const SIZE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
};
const TIME_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function usage(flag: string, expected: string, value: string): UsageError {
  return new UsageError(`Expected \`--${flag}\` to be ${expected}, got ${JSON.stringify(value)}`);
}

/** `512M`, `2g`, `1.5G`, `1048576`: bytes (binary units). */
export function parseSize(flag: string, value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(value.trim());
  const bytes = match
    ? Math.round(Number(match[1]) * (SIZE_UNITS[match[2]!.toLowerCase()] ?? 1))
    : Number.NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw usage(flag, 'a size such as 512M or 2G', value);
  return bytes;
}

/** `90s`, `5m`, `1500ms`, `1h`: milliseconds (a bare number is seconds). */
export function parseDuration(flag: string, value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/i.exec(value.trim());
  const ms = match
    ? Math.round(Number(match[1]) * (TIME_UNITS[(match[2] ?? 's').toLowerCase()] ?? 1000))
    : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 1) throw usage(flag, 'a time such as 90s, 5m or 1500ms', value);
  return ms;
}

function parseNumber(flag: string, value: string, integer: boolean): number {
  const number = Number(value.trim());
  const valid =
    value.trim() !== '' &&
    Number.isFinite(number) &&
    number > 0 &&
    (!integer || Number.isSafeInteger(number));
  if (!valid) throw usage(flag, integer ? 'a positive integer' : 'a positive number', value);
  return number;
}

/** The runtime's `resourceLimits` option from parsed flags; undefined when no limit flag was given. */
export function resourceLimitsFromFlags(
  values: Readonly<Record<string, unknown>>,
): ResourceLimitOptions | undefined {
  const sets: Record<string, ResourceLimits> = {};
  for (const { prefix } of SCOPES) {
    const read = (name: string) => {
      const value = values[`${prefix}${name}`];
      return typeof value === 'string' ? value : undefined;
    };
    const memory = read('memory-limit');
    const cpuTime = read('cpu-time-limit');
    const cpus = read('cpus');
    const pids = read('pids-limit');
    const limits: ResourceLimits = {
      ...(memory === undefined ? {} : { memoryBytes: parseSize(`${prefix}memory-limit`, memory) }),
      ...(cpuTime === undefined ? {} : { cpuTimeMs: parseDuration(`${prefix}cpu-time-limit`, cpuTime) }),
      ...(cpus === undefined ? {} : { cpus: parseNumber(`${prefix}cpus`, cpus, false) }),
      ...(pids === undefined ? {} : { pids: parseNumber(`${prefix}pids-limit`, pids, true) }),
    };
    if (Object.keys(limits).length > 0) sets[prefix === '' ? 'task' : 'session'] = limits;
  }
  const mechanism = values['limits-mechanism'];
  if (
    mechanism !== undefined &&
    (typeof mechanism !== 'string' || !['auto', ...LIMIT_MECHANISMS].includes(mechanism))
  ) {
    throw usage('limits-mechanism', `one of auto, ${LIMIT_MECHANISMS.join(', ')}`, String(mechanism));
  }
  if (Object.keys(sets).length === 0) {
    if (mechanism !== undefined)
      throw new UsageError(
        '`--limits-mechanism` needs a limit (`--memory-limit`, `--cpu-time-limit`, `--cpus`, `--pids-limit`, or a `--session-…` one)',
      );
    return undefined;
  }
  return {
    ...sets,
    ...(mechanism === undefined ? {} : { mechanism: mechanism as ResourceLimitOptions['mechanism'] }),
  };
}
