/**
 * Stops a set of processes that no one is the parent of any more (the trees of a runtime that died): the
 * polite signal and SIGCONT to every member a census finds, polls with back-off and signals newcomers,
 * SIGKILL to what is left after the grace, then waits until nothing is left. Unlike `TreeTerminator` it
 * has no root to signal as a group: each member is signalled by pid, moments after the census read its
 * start time, so a reused pid is never signalled.
 */
import type { Clock } from '../../tasks/clock.js';
import type { Logger } from '../../tasks/logger.js';
import type { ProcessEntry } from './process-table.js';
import type { SendSignal, TerminationReport } from './process-terminator.js';

export interface ProcessSweepOptions {
  /** The live members now (read from the process table each time it is called). */
  readonly census: () => readonly ProcessEntry[];
  readonly clock: Clock;
  /** How long members get between SIGTERM and SIGKILL, and again to vanish after SIGKILL. */
  readonly killGraceMs: number;
  readonly logger: Logger;
  readonly sendSignal?: SendSignal;
}

const POLL_FIRST_MS = 5;
const POLL_MAX_MS = 50;

function defaultSendSignal(pid: number, signal: NodeJS.Signals): void {
  process.kill(pid, signal);
}

export class ProcessSweep {
  readonly #options: ProcessSweepOptions;
  /** pid → start time of every member signalled so far, and with what. */
  readonly #signalled = new Map<number, { startTime: number; killed: boolean }>();

  constructor(options: ProcessSweepOptions) {
    this.#options = options;
  }

  /** SIGTERM (and SIGCONT) now, SIGKILL after the grace; resolves once no member is left. */
  async run(): Promise<TerminationReport> {
    const { clock, killGraceMs } = this.#options;
    let left = await this.#until(clock.now() + killGraceMs, false);
    const escalated = left.length > 0;
    if (escalated) left = await this.#until(clock.now() + killGraceMs, true);
    const survivors = left.map((member) => member.pid);
    if (survivors.length > 0) {
      this.#options.logger.warn('processes survived SIGKILL; giving up on them', { survivors });
    }
    return { signalled: this.#signalled.size, escalated, survivors };
  }

  /** Signals every member not yet signalled this way, polls until none is left or the deadline passes. */
  async #until(deadline: number, kill: boolean): Promise<readonly ProcessEntry[]> {
    const { clock } = this.#options;
    let interval = POLL_FIRST_MS;
    for (;;) {
      const members = this.#options.census();
      if (members.length === 0) return [];
      for (const member of members) this.#signal(member, kill);
      const remaining = deadline - clock.now();
      if (remaining <= 0) return members;
      await new Promise<void>((resolve) => clock.schedule(Math.min(interval, remaining), resolve));
      interval = Math.min(interval * 2, POLL_MAX_MS);
    }
  }

  #signal(member: ProcessEntry, kill: boolean): void {
    const known = this.#signalled.get(member.pid);
    // The same process, already sent this signal: nothing new to say.
    if (known !== undefined && known.startTime === member.startTime && (known.killed || !kill)) return;
    this.#signalled.set(member.pid, { startTime: member.startTime, killed: kill });
    const send = this.#options.sendSignal ?? defaultSendSignal;
    for (const signal of kill ? (['SIGKILL'] as const) : (['SIGTERM', 'SIGCONT'] as const)) {
      try {
        send(member.pid, signal);
      } catch {
        // ESRCH: it is already gone; EPERM: not ours to signal after all.
        return;
      }
    }
  }
}
