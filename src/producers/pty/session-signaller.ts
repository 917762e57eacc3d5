/**
 * Signals everything a pseudo-terminal started. The pty's child leads its own session and process group;
 * the family (see `findFamily`) is rescanned before every round so processes forked since the last scan,
 * and escapees that left the session, are reached too. Without /proc (not Linux) it falls back to the
 * leader's process group.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import {
  findFamily,
  hasProcFs,
  isAlive,
  type ProcessIdentity,
  type ProcessStat,
  readProcessStat,
  signalProcess,
  signalProcessGroup,
} from './process-tree.js';

/** How often the signaller looks whether signalled processes are gone (they are not our children). */
const POLL_INTERVAL_MS = 20;

export interface SessionSignallerOptions {
  readonly leaderPid: number;
  /** `NAME=value` present in the environment of every process the pty started. */
  readonly environmentMark: string;
}

export class SessionSignaller {
  readonly #leaderPid: number;
  readonly #leader: ProcessIdentity | undefined;
  readonly #environmentMark: string;
  /** Every family member seen so far, by pid, with its start time. */
  readonly #known = new Map<number, number>();

  constructor(options: SessionSignallerOptions) {
    this.#leaderPid = options.leaderPid;
    this.#environmentMark = options.environmentMark;
    const stat = hasProcFs() ? readProcessStat(options.leaderPid) : undefined;
    this.#leader = stat === undefined ? undefined : { pid: stat.pid, startTime: stat.startTime };
    if (this.#leader) this.#known.set(this.#leader.pid, this.#leader.startTime);
  }

  /** Scans the family now and remembers its members, so they stay recognisable after their parent dies. */
  scan(): ProcessStat[] {
    if (this.#leader === undefined) return [];
    const family = findFamily({
      leader: this.#leader,
      known: [...this.#known].map(([pid, startTime]) => ({ pid, startTime })),
      environmentMark: this.#environmentMark,
    });
    for (const member of family) this.#known.set(member.pid, member.startTime);
    return family;
  }

  /**
   * Sends SIGINT to the terminal's foreground process group: the job a person would stop with Ctrl-C.
   * Signalling directly (rather than writing `\x03`) works even when the program turned off the
   * terminal's signal characters (raw mode) and does not queue behind unread input.
   * Returns false when the group could not be determined (the caller then writes `\x03`).
   */
  interruptForeground(): boolean {
    if (this.#leader === undefined) return false;
    const family = this.scan();
    const leader = family.find((member) => member.pid === this.#leaderPid);
    const foreground = leader?.tpgid ?? -1;
    if (foreground <= 1) return false;
    const member = family.find((candidate) => candidate.pgrp === foreground);
    if (member === undefined) return false;
    return signalProcessGroup(foreground, member, 'SIGINT');
  }

  /** Sends `signal` to every family member (verified by start time) and to their process groups. */
  signalAll(signal: NodeJS.Signals): number {
    if (this.#leader === undefined) {
      // No /proc: the leader's group is the best reach there is.
      try {
        process.kill(-this.#leaderPid, signal);
        return 1;
      } catch {
        return 0;
      }
    }
    const family = this.scan();
    const groups = new Map<number, ProcessStat>();
    let signalled = 0;
    for (const member of family) {
      if (signalProcess(member, signal)) signalled += 1;
      if (!groups.has(member.pgrp)) groups.set(member.pgrp, member);
    }
    // A group signal also reaches members forked after the scan.
    for (const [pgid, member] of groups) signalProcessGroup(pgid, member, signal);
    return signalled;
  }

  /**
   * After the leader exited: stops whatever it left behind (SIGTERM, then SIGKILL after `graceMs`) and
   * waits up to `waitMs` for it to disappear. Returns how many processes were left behind and how many
   * survived the wait.
   */
  async reapLeftovers(graceMs: number, waitMs: number): Promise<{ leftovers: number; survivors: number }> {
    const initial = this.scan();
    if (initial.length === 0) return { leftovers: 0, survivors: 0 };
    const seen = new Set(initial.map((member) => member.pid));
    this.signalAll('SIGTERM');
    if (!(await this.#waitGone(graceMs, seen))) {
      const deadline = performance.now() + waitMs;
      do {
        this.signalAll('SIGKILL');
        if (await this.#waitGone(Math.min(200, Math.max(0, deadline - performance.now())), seen)) break;
      } while (performance.now() < deadline);
    }
    const survivors = this.scan();
    return { leftovers: seen.size, survivors: survivors.length };
  }

  /** Polls until the family is empty or `timeoutMs` passed; records every member it meets in `seen`. */
  async #waitGone(timeoutMs: number, seen: Set<number>): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (true) {
      const alive = [...this.#known].filter(([pid, startTime]) => isAlive({ pid, startTime }));
      if (alive.length === 0) {
        const family = this.scan();
        for (const member of family) seen.add(member.pid);
        if (family.length === 0) return true;
      }
      if (performance.now() >= deadline) return false;
      await delay(POLL_INTERVAL_MS);
    }
  }
}
