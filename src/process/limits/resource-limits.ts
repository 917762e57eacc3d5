/**
 * Resource limits of background commands: memory, CPU time, CPU share and process count, per command and
 * as a total over one session's commands. This file is the vocabulary and its validation; the
 * `ResourceLimiter` (`resource-limiter.ts`) enforces them with cgroups, or `setrlimit` where no cgroup can
 * be made. Every value is checked before anything runs, with an error naming the field and the value.
 */
import { InvalidArgumentError } from '../../tasks/errors.js';

/** What one command (or one session's commands together) may use. Every limit is optional: absent is none. */
export interface ResourceLimits {
  /** Memory (RAM and swap) of all its processes together, in bytes (at least 1 MiB). */
  readonly memoryBytes?: number;
  /** CPU time of all its processes together, in ms; past it the command is stopped (`cpu_limit`). */
  readonly cpuTimeMs?: number;
  /** CPU share: at most this many CPUs' worth of time per period (0.5: half a core); it throttles, never stops. */
  readonly cpus?: number;
  /** Processes and threads at once; a fork past it fails and the command is stopped (`pids_limit`). */
  readonly pids?: number;
}

/** How limits are enforced: cgroup v2, cgroup v1, or per-process `setrlimit` (the floor). */
export type LimitMechanism = 'cgroup-v2' | 'cgroup-v1' | 'rlimit';

export const LIMIT_MECHANISMS: readonly LimitMechanism[] = Object.freeze([
  'cgroup-v2',
  'cgroup-v1',
  'rlimit',
]);

/** Why a command was stopped for a limit. */
export type LimitReason = 'memory_limit' | 'cpu_limit' | 'pids_limit';

export const LIMIT_REASONS: readonly LimitReason[] = Object.freeze([
  'memory_limit',
  'cpu_limit',
  'pids_limit',
]);

/** A limit a command went past: which, whose (its own or its session's total), and the value. */
export interface LimitBreach {
  readonly reason: LimitReason;
  readonly scope: 'task' | 'session';
  /** The limit's value: bytes for memory, ms for CPU time, a count for processes. */
  readonly limit: number;
}

/** The options of a limiter: what to limit, and how. */
export interface ResourceLimitOptions {
  /** Each command's own limits. Default: none. */
  readonly task?: ResourceLimits;
  /** The total of one session's commands (a cgroup holding theirs; not under `rlimit`). Default: none. */
  readonly session?: ResourceLimits;
  /** Which mechanism to use; `auto` takes the first that works of cgroup v2, cgroup v1, rlimit. Default `auto`. */
  readonly mechanism?: LimitMechanism | 'auto';
  /**
   * A cgroup directory delegated to this process (cgroup v2: writable, its `cgroup.subtree_control`
   * enabling the controllers). Default: this process's own cgroup in each hierarchy.
   */
  readonly cgroupRoot?: string;
  /** How often running commands' cgroup counters (OOM kills, refused forks, CPU time) are read, 10 to 60000 ms. Default 250. */
  readonly pollMs?: number;
}

export const DEFAULT_LIMIT_POLL_MS = 250;

/** The smallest memory limit accepted: below it a shell cannot even start. */
export const MIN_MEMORY_LIMIT_BYTES = 1024 * 1024;

/** The JSON facts a task's detail carries about its limits (`detail.limits`). */
export interface LimitFacts {
  readonly mechanism: LimitMechanism;
  readonly task: ResourceLimits;
  readonly session: ResourceLimits;
  /** Limits the mechanism cannot enforce (under `rlimit`: CPU share and every session total). */
  readonly unenforced: readonly string[];
}

const LIMIT_KEYS = ['memoryBytes', 'cpuTimeMs', 'cpus', 'pids'] as const;

/** Validates one set of limits (`field` names it in errors); returns a frozen copy without absent keys. */
export function resolveLimitSet(value: unknown, field: string): ResourceLimits {
  if (value === undefined) return Object.freeze({});
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(
      field,
      'an object of limits ({ memoryBytes?, cpuTimeMs?, cpus?, pids? })',
      value,
    );
  }
  const given = value as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!(LIMIT_KEYS as readonly string[]).includes(key)) {
      throw new InvalidArgumentError(
        `${field}.${key}`,
        `absent (known limits: ${LIMIT_KEYS.join(', ')})`,
        given[key],
      );
    }
  }
  const result: Record<string, number> = {};
  const integer = (key: 'memoryBytes' | 'cpuTimeMs' | 'pids', min: number, expected: string) => {
    const item = given[key];
    if (item === undefined) return;
    if (typeof item !== 'number' || !Number.isSafeInteger(item) || item < min) {
      throw new InvalidArgumentError(`${field}.${key}`, expected, item);
    }
    result[key] = item;
  };
  integer('memoryBytes', MIN_MEMORY_LIMIT_BYTES, `an integer of at least ${MIN_MEMORY_LIMIT_BYTES} (bytes)`);
  integer('cpuTimeMs', 1, 'a positive integer (milliseconds)');
  integer('pids', 1, 'a positive integer');
  const cpus = given.cpus;
  if (cpus !== undefined) {
    if (typeof cpus !== 'number' || !Number.isFinite(cpus) || cpus < 0.01 || cpus > 4096) {
      throw new InvalidArgumentError(`${field}.cpus`, 'a number of CPUs from 0.01 to 4096', cpus);
    }
    result.cpus = cpus;
  }
  return Object.freeze(result);
}

/** Whether a set of limits limits anything. */
export function limitsAnything(limits: ResourceLimits): boolean {
  return LIMIT_KEYS.some((key) => limits[key] !== undefined);
}

/** `512 MiB`, `1.5 GiB`, `800 KiB`: a byte count for people. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1 && Number.isInteger(value / 1024)) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0 && bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${value} ${units[unit]}`;
}

/** `memory 512 MiB, CPU time 60000 ms, 0.5 CPUs, 64 processes`. */
export function describeLimitSet(limits: ResourceLimits): string {
  const parts: string[] = [];
  if (limits.memoryBytes !== undefined) parts.push(`memory ${formatBytes(limits.memoryBytes)}`);
  if (limits.cpuTimeMs !== undefined) parts.push(`CPU time ${limits.cpuTimeMs} ms`);
  if (limits.cpus !== undefined) parts.push(`${limits.cpus} CPUs`);
  if (limits.pids !== undefined) parts.push(`${limits.pids} processes`);
  return parts.join(', ');
}

/** A breach in words: `exceeding its memory limit of 64 MiB` / `exceeding its session's process limit of 32`. */
export function describeBreach(breach: LimitBreach): string {
  const whose = breach.scope === 'session' ? "its session's" : 'its';
  switch (breach.reason) {
    case 'memory_limit':
      return `exceeding ${whose} memory limit of ${formatBytes(breach.limit)}`;
    case 'cpu_limit':
      return `exceeding ${whose} CPU time limit of ${breach.limit} ms`;
    case 'pids_limit':
      return `exceeding ${whose} process limit of ${breach.limit}`;
  }
}

/**
 * A task's limits as its detail records them, in words: `cgroup-v1: memory 64 MiB, 32 processes`.
 * Undefined for a task that ran without limits (no `limits` in its detail).
 */
export function limitsSummaryOf(detail: object): string | undefined {
  const facts = (detail as { limits?: unknown }).limits as Partial<LimitFacts> | null | undefined;
  if (typeof facts !== 'object' || facts === null || typeof facts.mechanism !== 'string') return undefined;
  const task = typeof facts.task === 'object' && facts.task !== null ? describeLimitSet(facts.task) : '';
  const session =
    typeof facts.session === 'object' && facts.session !== null ? describeLimitSet(facts.session) : '';
  const parts = [task, session === '' ? '' : `session total ${session}`].filter((part) => part !== '');
  return `${facts.mechanism}: ${parts.join('; ')}`;
}
