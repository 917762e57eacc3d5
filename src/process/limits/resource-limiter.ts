/**
 * The resource limiter: enforces `ResourceLimits` on commands. It picks its mechanism once (cgroup v2, else
 * cgroup v1, else `setrlimit`), makes one cgroup for the runtime, one per session inside it (holding the
 * session's total) and one per command inside that; `open()` gives a command's `LimitedLaunch`, whose
 * `confine` rewrites the launch request through the limit shim (the command is in its group before it
 * execs). While commands run it reads their counters every `pollMs` and reports a breach once: an OOM kill
 * (`memory_limit`), a refused fork (`pids_limit`), CPU time past the limit (`cpu_limit`). A command's group
 * is removed once its tree is gone; the runtime's when the limiter is disposed.
 */
import { readdirSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Clock, systemClock } from '../../tasks/clock.js';
import { ErrandError, InvalidArgumentError } from '../../tasks/errors.js';
import { createConsoleLogger, type Logger } from '../../tasks/logger.js';
import { option } from '../../tasks/options.js';
import type { LaunchRequest } from '../launch/process-launcher.js';
import {
  type CgroupLayout,
  findV1Bases,
  findV2Base,
  readCgroupTables,
  type V1Controller,
  type V2Controller,
} from './cgroup-layout.js';
import { CgroupNode, type CgroupPlace } from './cgroup-node.js';
import { type ShimRlimits, wrapInLimitShim } from './limit-shim.js';
import {
  DEFAULT_LIMIT_POLL_MS,
  LIMIT_MECHANISMS,
  type LimitBreach,
  type LimitFacts,
  type LimitMechanism,
  type LimitReason,
  limitsAnything,
  type ResourceLimitOptions,
  type ResourceLimits,
  resolveLimitSet,
} from './resource-limits.js';

const marker = Symbol.for('errand.resource-limiter');

/** The name prefix of a runtime's cgroup: `errand-<pid>-<random>`. */
export const LIMIT_GROUP_PREFIX = 'errand-';

/** No cgroup could be made for the mechanism asked for (never a silent weaker fallback). */
export class LimitsUnavailableError extends ErrandError {
  constructor(mechanism: LimitMechanism, problem: string) {
    super(
      'LIMITS_UNAVAILABLE',
      'system',
      `Resource limits with ${mechanism} are not available here: ${problem}`,
      {
        context: { mechanism },
      },
    );
  }
}

/** What the limiter needs besides the limits. */
export interface ResourceLimiterSettings extends ResourceLimitOptions {
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Where `self/cgroup` and `self/mountinfo` are read (tests). Default `/proc`. */
  readonly procRoot?: string;
}

/** A limiter, or the options to make one. */
export type ResourceLimitSetting = ResourceLimitOptions | ResourceLimiter;

/** A command's part of the limiter: its request rewrite, its breach, its group's removal. */
export interface LimitedLaunch {
  /** The request to launch instead (through the limit shim); makes the command's cgroup. Throws when it cannot. */
  confine(request: LaunchRequest): LaunchRequest;
  /** Reads the counters now (and at the exit of the command's first process: `exitSignal`); the first breach sticks. */
  check(exitSignal?: NodeJS.Signals | null): LimitBreach | undefined;
  readonly breach: LimitBreach | undefined;
  /** Called once, at the first breach found. */
  onBreach(listener: (breach: LimitBreach) => void): void;
  /** Once the tree is gone: a last check, then the group is removed (what is still in it is killed). */
  release(): Promise<void>;
}

interface SessionGroup {
  readonly key: string;
  readonly node: CgroupNode | undefined;
  refs: number;
}

const logger_ = createConsoleLogger('errand:limits');

export class ResourceLimiter {
  readonly [marker] = true as const;
  readonly mechanism: LimitMechanism;
  readonly task: ResourceLimits;
  readonly session: ResourceLimits;
  readonly facts: LimitFacts;
  readonly pollMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #runtime: CgroupNode | undefined;
  readonly #sessions = new Map<string, SessionGroup>();
  readonly #live = new Set<CommandLimits>();
  #sessionSequence = 0;
  #taskSequence = 0;
  #cancelTick: (() => void) | undefined;
  #disposed = false;

  constructor(settings: ResourceLimiterSettings, field = 'resourceLimits') {
    const checked = checkLimitOptions(settings, field);
    this.task = checked.task;
    this.session = checked.session;
    this.pollMs = checked.pollMs;
    const choice = checked.mechanism;
    const root = checked.cgroupRoot;
    this.#clock = settings.clock ?? systemClock;
    this.#logger = settings.logger ?? logger_;
    const layout = choice === 'rlimit' ? undefined : this.#findLayout(choice, root, settings.procRoot);
    let runtime: CgroupNode | undefined;
    if (layout !== undefined) {
      try {
        runtime = this.#makeRuntimeGroup(layout);
      } catch (error) {
        const mechanism = layout.version === 2 ? 'cgroup-v2' : 'cgroup-v1';
        if (choice !== 'auto')
          throw new LimitsUnavailableError(mechanism, `its group could not be made (${String(error)})`);
        this.#logger.warn('resource limits fall back to setrlimit: no cgroup could be made', {
          error: String(error),
        });
      }
    }
    this.#runtime = runtime;
    this.mechanism =
      runtime === undefined ? 'rlimit' : runtime.place.version === 2 ? 'cgroup-v2' : 'cgroup-v1';
    const unenforced: string[] = [];
    if (this.mechanism === 'rlimit') {
      if (this.task.cpus !== undefined) unenforced.push('task.cpus');
      for (const key of Object.keys(this.session)) unenforced.push(`session.${key}`);
    }
    this.facts = Object.freeze({
      mechanism: this.mechanism,
      task: this.task,
      session: this.session,
      unenforced: Object.freeze(unenforced),
    });
  }

  /** Whether a limit is set at all (a limiter without one rewrites nothing). */
  get limitsAnything(): boolean {
    return limitsAnything(this.task) || limitsAnything(this.session);
  }

  /** The runtime's cgroup directories (empty under `rlimit`). */
  get directories(): string[] {
    return this.#runtime?.directories ?? [];
  }

  /** A command's limits, in the session group `sessionKey` (commands without one share a group). */
  open(sessionKey: string | undefined): LimitedLaunch {
    return new CommandLimits(this, sessionKey ?? '');
  }

  /** Removes every group this limiter made (killing what is still in them). Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#cancelTick?.();
    this.#cancelTick = undefined;
    for (const command of this.#live) command.removeNow();
    this.#live.clear();
    for (const group of this.#sessions.values()) group.node?.remove();
    this.#sessions.clear();
    if (this.#runtime !== undefined && !this.#runtime.remove()) {
      this.#logger.warn('a resource-limit group could not be removed', {
        directories: this.#runtime.directories,
      });
    }
  }

  /** @internal The node a new command's group goes under, counted until `leaveSession`. */
  enterSession(key: string): { node: CgroupNode | undefined; group: SessionGroup } {
    if (this.#disposed)
      throw new InvalidArgumentError('resourceLimits', 'a limiter that was not disposed', 'disposed');
    let group = this.#sessions.get(key);
    if (group === undefined) {
      const node =
        this.#runtime !== undefined && limitsAnything(this.session)
          ? this.#runtime.child(`s${++this.#sessionSequence}`, this.session, false)
          : undefined;
      group = { key, node, refs: 0 };
      this.#sessions.set(key, group);
    }
    group.refs += 1;
    return { node: group.node ?? this.#runtime, group };
  }

  /** @internal A command's group is gone: an empty session group goes too, unless it keeps a CPU-time budget. */
  leaveSession(group: SessionGroup): void {
    group.refs -= 1;
    if (group.refs > 0 || this.session.cpuTimeMs !== undefined) return;
    if (group.node !== undefined && !group.node.remove()) return;
    this.#sessions.delete(group.key);
  }

  /** @internal */
  nextTaskName(): string {
    return `t${++this.#taskSequence}`;
  }

  /** @internal Watched from its launch until its release. */
  track(command: CommandLimits): void {
    this.#live.add(command);
    if (this.#cancelTick === undefined) this.#scheduleTick();
  }

  /** @internal */
  untrack(command: CommandLimits): void {
    this.#live.delete(command);
    if (this.#live.size === 0) {
      this.#cancelTick?.();
      this.#cancelTick = undefined;
    }
  }

  get logger(): Logger {
    return this.#logger;
  }

  get clock(): Clock {
    return this.#clock;
  }

  #scheduleTick(): void {
    this.#cancelTick = this.#clock.schedule(this.pollMs, () => {
      this.#cancelTick = undefined;
      for (const command of [...this.#live]) command.check();
      if (this.#live.size > 0 && !this.#disposed) this.#scheduleTick();
    });
  }

  #findLayout(
    choice: LimitMechanism | 'auto',
    root: string | undefined,
    procRoot: string | undefined,
  ): CgroupLayout | undefined {
    const limits = [this.task, this.session];
    const uses = (key: keyof ResourceLimits) => limits.some((set) => set[key] !== undefined);
    const v2: V2Controller[] = [];
    if (uses('memoryBytes')) v2.push('memory');
    if (uses('pids')) v2.push('pids');
    if (uses('cpus')) v2.push('cpu');
    const v1: V1Controller[] = [...v2];
    if (uses('cpuTimeMs')) v1.push('cpuacct');
    if (v1.length === 0) return undefined;
    const { mounts, memberships } = readCgroupTables(procRoot);
    if (choice === 'auto' || choice === 'cgroup-v2') {
      const base = findV2Base(v2, mounts, memberships, root);
      if (base !== undefined && enableControllers(base, v2)) return { version: 2, base, controllers: v2 };
      if (choice === 'cgroup-v2') {
        throw new LimitsUnavailableError(
          'cgroup-v2',
          `no writable cgroup v2 directory enables ${v2.join(', ') || 'cgroups'} for this process${root === undefined ? '' : ` at ${root}`}`,
        );
      }
    }
    const bases = findV1Bases(v1, mounts, memberships);
    if (bases !== undefined) return { version: 1, bases };
    if (choice === 'cgroup-v1') {
      throw new LimitsUnavailableError(
        'cgroup-v1',
        `a writable cgroup v1 hierarchy is missing for one of ${v1.join(', ')}`,
      );
    }
    return undefined;
  }

  /** The runtime's own group under each base; leftovers of runtimes that died go first. Undefined: none could be made. */
  #makeRuntimeGroup(layout: CgroupLayout): CgroupNode | undefined {
    const place: CgroupPlace =
      layout.version === 2
        ? { version: 2, dir: layout.base, controllers: layout.controllers }
        : { version: 1, dirs: layout.bases };
    const base = CgroupNode.at(place);
    for (const dir of base.directories) removeLeftoverGroups(dir);
    const name = `${LIMIT_GROUP_PREFIX}${process.pid}-${Math.random().toString(16).slice(2, 8)}`;
    return base.child(name, {}, false);
  }
}

/** Options of a limiter, checked (no side effect): the limits, the mechanism asked for, the root, the poll. */
export interface CheckedLimitOptions {
  readonly task: ResourceLimits;
  readonly session: ResourceLimits;
  readonly mechanism: LimitMechanism | 'auto';
  readonly cgroupRoot: string | undefined;
  readonly pollMs: number;
}

const OPTION_KEYS = ['task', 'session', 'mechanism', 'cgroupRoot', 'pollMs'];

/** Checks a limiter's options; throws `INVALID_ARGUMENT` naming the field (`resourceLimits.task.pids`) and the value. */
export function checkLimitOptions(
  settings: ResourceLimiterSettings,
  field = 'resourceLimits',
): CheckedLimitOptions {
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
    throw new InvalidArgumentError(
      field,
      `an object ({ ${OPTION_KEYS.join(', ')} }, each optional)`,
      settings,
    );
  }
  for (const key of Object.keys(settings)) {
    if (!OPTION_KEYS.includes(key) && !['clock', 'logger', 'procRoot'].includes(key)) {
      const value = (settings as unknown as Record<string, unknown>)[key];
      throw new InvalidArgumentError(`${field}.${key}`, `absent (known: ${OPTION_KEYS.join(', ')})`, value);
    }
  }
  const mechanism = settings.mechanism ?? 'auto';
  if (mechanism !== 'auto' && !LIMIT_MECHANISMS.includes(mechanism)) {
    const names = ['auto', ...LIMIT_MECHANISMS].map((name) => `\`${name}\``).join(', ');
    throw new InvalidArgumentError(`${field}.mechanism`, `one of ${names}`, mechanism);
  }
  const root = settings.cgroupRoot;
  if (root !== undefined && (typeof root !== 'string' || !root.startsWith('/') || root.includes('\0'))) {
    throw new InvalidArgumentError(`${field}.cgroupRoot`, 'an absolute path', root);
  }
  const pollMs = settings.pollMs ?? DEFAULT_LIMIT_POLL_MS;
  if (!Number.isSafeInteger(pollMs) || pollMs < 10 || pollMs > 60_000) {
    throw new InvalidArgumentError(`${field}.pollMs`, 'an integer from 10 to 60000', settings.pollMs);
  }
  return Object.freeze({
    task: resolveLimitSet(settings.task, `${field}.task`),
    session: resolveLimitSet(settings.session, `${field}.session`),
    mechanism,
    cgroupRoot: root,
    pollMs,
  });
}

/** Enables `controllers` for the children of a v2 directory; false when the kernel refuses (it holds processes). */
function enableControllers(base: string, controllers: readonly V2Controller[]): boolean {
  if (controllers.length === 0) return true;
  try {
    writeFileSync(join(base, 'cgroup.subtree_control'), controllers.map((name) => `+${name}`).join(' '));
    return true;
  } catch {
    return false;
  }
}

/** Whether a process with this pid runs. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the groups of runtimes that are gone (`errand-<pid>-…` whose pid no longer runs): a runtime killed
 * with SIGKILL leaves its groups behind. Innermost first; a group still holding processes is left.
 */
export function removeLeftoverGroups(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const match = /^errand-(\d+)-[0-9a-f]+$/.exec(name);
    if (match === null || running(Number(match[1]))) continue;
    removeDirectoryTree(join(base, name));
  }
}

function removeDirectoryTree(dir: string): void {
  try {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) removeDirectoryTree(path);
    }
    rmdirSync(dir);
  } catch {
    // Busy or gone: left as it is.
  }
}

/** One command's limits: its group (or, under `rlimit`, its ulimits) and its breach. */
class CommandLimits implements LimitedLaunch {
  readonly #limiter: ResourceLimiter;
  readonly #sessionKey: string;
  #node: CgroupNode | undefined;
  #session: SessionGroup | undefined;
  #breach: LimitBreach | undefined;
  #listeners: Array<(breach: LimitBreach) => void> = [];
  #released: Promise<void> | undefined;
  #removed = false;

  constructor(limiter: ResourceLimiter, sessionKey: string) {
    this.#limiter = limiter;
    this.#sessionKey = sessionKey;
  }

  get breach(): LimitBreach | undefined {
    return this.#breach;
  }

  confine(request: LaunchRequest): LaunchRequest {
    const limiter = this.#limiter;
    if (limiter.mechanism === 'rlimit')
      return wrapInLimitShim(request, { procsFiles: [], rlimits: rlimitsOf(limiter.task) });
    const { node, group } = limiter.enterSession(this.#sessionKey);
    this.#session = group;
    try {
      this.#node = (node as CgroupNode).child(limiter.nextTaskName(), limiter.task, true);
    } catch (error) {
      limiter.leaveSession(group);
      this.#session = undefined;
      throw error;
    }
    limiter.track(this);
    return wrapInLimitShim(request, { procsFiles: this.#node.procsFiles });
  }

  onBreach(listener: (breach: LimitBreach) => void): void {
    if (this.#breach !== undefined) listener(this.#breach);
    else this.#listeners.push(listener);
  }

  check(exitSignal?: NodeJS.Signals | null): LimitBreach | undefined {
    if (this.#breach !== undefined) return this.#breach;
    const found = this.#node === undefined ? this.#rlimitBreach(exitSignal) : this.#cgroupBreach();
    if (found !== undefined) {
      this.#breach = Object.freeze(found);
      const listeners = this.#listeners;
      this.#listeners = [];
      for (const listener of listeners) {
        try {
          listener(found);
        } catch (error) {
          this.#limiter.logger.warn('a limit-breach listener threw', { error: String(error) });
        }
      }
    }
    return this.#breach;
  }

  /** Under `rlimit` only RLIMIT_CPU says so: the kernel's SIGXCPU ended the command's first process. */
  #rlimitBreach(exitSignal: NodeJS.Signals | null | undefined): LimitBreach | undefined {
    const limit = this.#limiter.task.cpuTimeMs;
    if (exitSignal === 'SIGXCPU' && limit !== undefined) return { reason: 'cpu_limit', scope: 'task', limit };
    return undefined;
  }

  #cgroupBreach(): LimitBreach | undefined {
    const node = this.#node as CgroupNode;
    const { task, session } = this.#limiter;
    const counters = node.counters();
    if (counters.oomKills > 0) {
      const own =
        task.memoryBytes !== undefined && (session.memoryBytes === undefined || node.memoryLimitHits() > 0);
      return breachOf('memory_limit', own ? 'task' : 'session', own ? task.memoryBytes : session.memoryBytes);
    }
    if (counters.forkFailures > 0) {
      const own =
        task.pids !== undefined && (session.pids === undefined || node.peakProcesses() >= task.pids);
      return breachOf('pids_limit', own ? 'task' : 'session', own ? task.pids : session.pids);
    }
    if (task.cpuTimeMs !== undefined && counters.cpuMicros >= task.cpuTimeMs * 1000) {
      return breachOf('cpu_limit', 'task', task.cpuTimeMs);
    }
    const sessionNode = this.#session?.node;
    if (session.cpuTimeMs !== undefined && sessionNode !== undefined) {
      if (sessionNode.counters().cpuMicros >= session.cpuTimeMs * 1000) {
        return breachOf('cpu_limit', 'session', session.cpuTimeMs);
      }
    }
    return undefined;
  }

  release(): Promise<void> {
    this.#released ??= this.#releaseNow();
    return this.#released;
  }

  async #releaseNow(): Promise<void> {
    if (this.#node === undefined) return;
    this.check();
    this.#limiter.untrack(this);
    // The tree is gone; a process the census missed is still in the group, and is killed by its removal.
    for (let attempt = 0; attempt < 50 && !this.#removed; attempt += 1) {
      this.removeNow();
      if (!this.#removed)
        await new Promise<void>((resolve) =>
          this.#limiter.clock.schedule(Math.min(5 * (attempt + 1), 100), resolve),
        );
    }
    if (!this.#removed) {
      this.#limiter.logger.warn("a command's resource-limit group could not be removed", {
        directories: this.#node.directories,
      });
    }
  }

  /** @internal One removal attempt; the session's count drops once it succeeded. */
  removeNow(): void {
    if (this.#removed || this.#node === undefined) return;
    if (!this.#node.remove()) return;
    this.#removed = true;
    if (this.#session !== undefined) this.#limiter.leaveSession(this.#session);
  }
}

function breachOf(reason: LimitReason, scope: 'task' | 'session', limit: number | undefined): LimitBreach {
  return { reason, scope, limit: limit ?? 0 };
}

/** The floor: per-process limits for what the task's limits ask (CPU time rounded up to seconds). */
function rlimitsOf(limits: ResourceLimits): ShimRlimits {
  return {
    ...(limits.memoryBytes === undefined ? {} : { addressSpaceKiB: Math.floor(limits.memoryBytes / 1024) }),
    ...(limits.cpuTimeMs === undefined
      ? {}
      : { cpuSeconds: Math.max(1, Math.ceil(limits.cpuTimeMs / 1000)) }),
    ...(limits.pids === undefined ? {} : { processes: limits.pids }),
  };
}

/** Whether `value` is a limiter (across package copies). */
export function isResourceLimiter(value: unknown): value is ResourceLimiter {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
}

/**
 * The `resourceLimits` option of every part that launches commands: checked when the part's options are
 * (no cgroup is made then), so a bad value fails before anything runs; the part makes its limiter (and
 * detects the mechanism) once, when it is created.
 */
export const resourceLimitsOption = () =>
  option.custom<ResourceLimitSetting, ResourceLimitSetting>(
    'resource limits ({ task?, session?, mechanism?, cgroupRoot?, pollMs? }) or a ResourceLimiter',
    () => true,
    {
      convert: (value, path) => {
        if (!isResourceLimiter(value)) checkLimitOptions(value, path);
        return value;
      },
    },
  );

/**
 * A part's limiter from its setting: the given one (its owner disposes it: `owned` false), or a new one
 * (`owned` true). Undefined when nothing is limited.
 */
export function limiterOf(
  setting: ResourceLimitSetting | undefined,
  extra: { readonly clock?: Clock; readonly logger?: Logger } = {},
): { limiter: ResourceLimiter; owned: boolean } | undefined {
  if (setting === undefined) return undefined;
  if (isResourceLimiter(setting))
    return setting.limitsAnything ? { limiter: setting, owned: false } : undefined;
  const checked = checkLimitOptions(setting);
  if (!limitsAnything(checked.task) && !limitsAnything(checked.session)) return undefined;
  return { limiter: new ResourceLimiter({ ...setting, ...extra }), owned: true };
}
