/**
 * Stops a command's whole process tree: SIGTERM to the process group and to every member found outside
 * it, SIGKILL to whatever is left after a grace, then waits until nothing is left. Every signal goes
 * to a process the census attributed to the tree moments before, so a reused pid is never signalled.
 *
 * SIGCONT follows the polite signals: a stopped process (Ctrl-Z, SIGSTOP, a debugger) would otherwise
 * hold SIGTERM pending through the whole grace and only ever meet SIGKILL.
 */
import type { Clock } from '../../tasks/clock.js';
import type { Logger } from '../../tasks/logger.js';
import type { ProcessEntry, ProcessSource } from './process-table.js';
import { type EnvironmentTag, scanTree, type TreeCensus, type TreeRoot } from './process-tree.js';
import { withSharedTable } from './shared-table-read.js';

export interface TerminationReport {
  /** How many processes received at least one signal from the terminator. */
  readonly signalled: number;
  /** True when something outlived SIGTERM and was sent SIGKILL. */
  readonly escalated: boolean;
  /** Members still alive when the terminator gave up (a process stuck in the kernel, say). */
  readonly survivors: readonly number[];
}

export type SendSignal = (pid: number, signal: NodeJS.Signals) => void;

export interface TreeTerminatorOptions {
  readonly root: TreeRoot;
  readonly source: ProcessSource;
  readonly clock: Clock;
  /** How long members get between SIGTERM and SIGKILL, and again to vanish after SIGKILL. */
  readonly killGraceMs: number;
  readonly tag?: EnvironmentTag | undefined;
  /** True while the root is an unreaped child of ours: its pid, and so its group id, cannot be reused. */
  readonly rootAlive: () => boolean;
  /** Until this clock time a census may read only pids newer than the root's. */
  readonly newerPidsUntil: number;
  readonly logger: Logger;
  readonly sendSignal?: SendSignal;
  /**
   * The signals that ask the tree to end, sent together before the grace. Default `['SIGTERM']`; a
   * terminal sends `['SIGHUP', 'SIGTERM']`, since an interactive shell ignores SIGTERM but ends on a hangup.
   */
  readonly politeSignals?: readonly NodeJS.Signals[];
}

const DEFAULT_POLITE_SIGNALS: readonly NodeJS.Signals[] = Object.freeze(['SIGTERM']);

const EMPTY_REPORT: TerminationReport = Object.freeze({ signalled: 0, escalated: false, survivors: [] });
const KILL: readonly NodeJS.Signals[] = Object.freeze(['SIGKILL']);
const POLL_FIRST_MS = 5;
const POLL_MAX_MS = 50;

function defaultSendSignal(pid: number, signal: NodeJS.Signals): void {
  process.kill(pid, signal);
}

export class TreeTerminator {
  readonly #options: TreeTerminatorOptions;
  readonly #known = new Map<number, number>();
  readonly #signalled = new Set<number>();
  #termination: Promise<TerminationReport> | undefined;

  constructor(options: TreeTerminatorOptions) {
    this.#options = options;
  }

  /** True once `terminate()` was called (directly or by a sweep that found members). */
  get terminating(): boolean {
    return this.#termination !== undefined;
  }

  /** Reads the tree as it is now and remembers its members for later censuses. */
  census(): TreeCensus {
    return this.#censusOf(this.#options.source);
  }

  #censusOf(source: ProcessSource): TreeCensus {
    const options = this.#options;
    const census = scanTree(source, options.root, {
      rootAlive: options.rootAlive(),
      known: this.#known,
      exclude: process.pid,
      newerPidsOnly: options.clock.now() < options.newerPidsUntil,
      ...(options.tag ? { tag: options.tag } : {}),
    });
    for (const member of census.members) this.#known.set(member.pid, member.startTime);
    return census;
  }

  /** Terminates the tree if anything of it is left (after the root exited on its own). */
  sweep(): Promise<TerminationReport> {
    if (this.#termination) return this.#termination;
    // The sweeps of a burst of exits share one reading of the table (see shared-table-read.ts).
    return new Promise<TerminationReport>((resolve, reject) => {
      withSharedTable(this.#options.source, (table) => {
        if (this.#termination) {
          resolve(this.#termination);
          return;
        }
        try {
          const census = this.#censusOf(table);
          resolve(census.members.length === 0 ? EMPTY_REPORT : this.terminate(census));
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  /** SIGTERM now, SIGKILL after the grace; resolves once no member is left. Idempotent. */
  terminate(census?: TreeCensus): Promise<TerminationReport> {
    this.#termination ??= this.#run(census);
    return this.#termination;
  }

  async #run(initial: TreeCensus | undefined): Promise<TerminationReport> {
    const { clock, killGraceMs } = this.#options;
    const polite = this.#options.politeSignals ?? DEFAULT_POLITE_SIGNALS;
    this.#signal(initial ?? this.census(), polite);
    let left = await this.#waitUntilGone(clock.now() + killGraceMs, polite);
    let escalated = false;
    if (left.length > 0) {
      escalated = true;
      this.#signal(this.census(), KILL, true);
      left = await this.#waitUntilGone(clock.now() + killGraceMs, KILL);
    }
    const survivors = left.map((member) => member.pid);
    if (survivors.length > 0) {
      this.#options.logger.warn('processes survived SIGKILL; giving up on them', {
        rootPid: this.#options.root.pid,
        survivors,
      });
    }
    return { signalled: this.#signalled.size, escalated, survivors };
  }

  /** Polls (backing off to 50 ms) until the tree is empty or `deadline`; signals newcomers on the way. */
  async #waitUntilGone(
    deadline: number,
    signals: readonly NodeJS.Signals[],
  ): Promise<readonly ProcessEntry[]> {
    const { clock } = this.#options;
    let interval = POLL_FIRST_MS;
    for (;;) {
      let census = this.census();
      if (census.members.length === 0) {
        // "Gone" is decided on the table as it is now, not on what a census moments ago kept of it.
        this.#options.source.refresh?.();
        census = this.census();
        if (census.members.length === 0) return [];
      }
      // Members that appeared since the last signal (forked by a trap handler, say) get it too.
      this.#signal(census, signals, false, true);
      const remaining = deadline - clock.now();
      if (remaining <= 0) return census.members;
      // Polls land on multiples of the interval, so trees stopped together share one read of /proc.
      const delay = Math.min(interval - (clock.now() % interval), remaining);
      await new Promise<void>((resolve) => clock.schedule(delay, resolve));
      interval = Math.min(interval * 2, POLL_MAX_MS);
    }
  }

  /** Sends `signals` in order to each target; SIGCONT after polite ones, so stopped members act on them. */
  #signal(
    census: TreeCensus,
    signals: readonly NodeJS.Signals[],
    force = false,
    newcomersOnly = false,
  ): void {
    const { root, rootAlive } = this.#options;
    const send = this.#options.sendSignal ?? defaultSendSignal;
    const members = newcomersOnly
      ? census.members.filter((member) => !this.#signalled.has(member.pid))
      : census.members;
    if (members.length === 0 && !force) return;
    const groupReachable =
      rootAlive() || (census.groupIsOurs && members.some((member) => member.pgid === root.pid));
    if (groupReachable && !newcomersOnly) this.#send(send, -root.pid, signals);
    for (const member of members) {
      this.#signalled.add(member.pid);
      if (groupReachable && !newcomersOnly && member.pgid === root.pid) continue;
      this.#send(send, member.pid, signals);
    }
  }

  #send(send: SendSignal, pid: number, signals: readonly NodeJS.Signals[]): void {
    const sequence = signals === KILL ? signals : [...signals, 'SIGCONT' as const];
    for (const signal of sequence) {
      try {
        send(pid, signal);
      } catch {
        // ESRCH: it is already gone; EPERM: not ours to signal after all.
        return;
      }
    }
  }
}
