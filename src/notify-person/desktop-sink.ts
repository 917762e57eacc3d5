/**
 * The desktop sink: runs the host's `notify-send` (libnotify) with the notice's title and summary. The
 * program is looked up on PATH once; when there is none the sink says so in one line and stays off.
 * One program at a time, from a small bounded queue, each given a few seconds before it is killed.
 */
import { spawn } from 'node:child_process';
import { findOnPath } from '../process/index.js';
import type { Clock, Logger } from '../tasks/index.js';
import { noticeTitle, type PersonNotice } from './person-notice.js';
import type { SentAttempt } from './sent-log.js';

export const DESKTOP_PROGRAM = 'notify-send';

export interface DesktopSettings {
  /** The search path for `notify-send`. */
  readonly searchPath: string;
  readonly maxQueue: number;
  readonly timeoutMs: number;
}

export interface DesktopSinkContext {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly report: (
    notice: PersonNotice,
    attempt: Omit<SentAttempt, 'sink' | 'target' | 'updatedAt'>,
  ) => void;
}

/** The arguments `notify-send` gets for a notice. */
export function desktopArguments(notice: PersonNotice): string[] {
  const urgency = notice.event === 'task-failed' || notice.event === 'input-needed' ? 'critical' : 'normal';
  const body = notice.lines.length > 0 ? `${notice.summary}\n${notice.lines.join('\n')}` : notice.summary;
  // `--` ends the options: a label starting with "-" is never read as one.
  return ['--app-name=Errand', `--urgency=${urgency}`, '--', noticeTitle(notice), body];
}

export class DesktopSink {
  /** The program found, or undefined (the sink is off). */
  readonly program: string | undefined;
  readonly #settings: DesktopSettings;
  readonly #context: DesktopSinkContext;
  readonly #queue: PersonNotice[] = [];
  readonly #idleWaiters: Array<() => void> = [];
  #running = false;
  #disposed = false;
  #current: ReturnType<typeof spawn> | undefined;

  constructor(settings: DesktopSettings, context: DesktopSinkContext) {
    this.#settings = settings;
    this.#context = context;
    this.program = findOnPath(DESKTOP_PROGRAM, settings.searchPath, { absoluteOnly: true });
    if (this.program === undefined) {
      context.logger.warn(
        'desktop notifications are off: notify-send was not found on PATH (Debian and Ubuntu: apt-get install libnotify-bin)',
      );
    }
  }

  get available(): boolean {
    return this.program !== undefined;
  }

  enqueue(notice: PersonNotice): boolean {
    if (this.#disposed) return false;
    if (this.program === undefined) {
      this.#context.report(notice, {
        state: 'failed',
        attempts: 0,
        httpStatus: null,
        error: 'NOT_AVAILABLE',
      });
      return false;
    }
    if (this.#queue.length >= this.#settings.maxQueue) {
      this.#context.report(notice, { state: 'dropped', attempts: 0, httpStatus: null, error: 'QUEUE_FULL' });
      return false;
    }
    this.#queue.push(notice);
    this.#context.report(notice, { state: 'queued', attempts: 0, httpStatus: null, error: null });
    void this.#drain();
    return true;
  }

  whenIdle(): Promise<void> {
    if (!this.#running && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  dispose(): void {
    this.#disposed = true;
    this.#queue.length = 0;
    this.#current?.kill('SIGKILL');
  }

  async #drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (!this.#disposed && this.#queue.length > 0) {
        const notice = this.#queue.shift() as PersonNotice;
        const error = await this.#show(notice);
        this.#context.report(notice, {
          state: error === null ? 'delivered' : 'failed',
          attempts: 1,
          httpStatus: null,
          error,
        });
      }
    } finally {
      this.#running = false;
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }

  /** Runs the program once; null on exit code 0, else why not. */
  #show(notice: PersonNotice): Promise<string | null> {
    return new Promise((resolve) => {
      const child = spawn(this.program as string, desktopArguments(notice), {
        stdio: 'ignore',
        env: process.env,
      });
      this.#current = child;
      let timedOut = false;
      const cancel = this.#context.clock.schedule(this.#settings.timeoutMs, () => {
        timedOut = true;
        child.kill('SIGKILL');
      });
      child.once('error', (error: NodeJS.ErrnoException) => {
        cancel();
        resolve(error.code ?? 'SPAWN_FAILED');
      });
      child.once('exit', (code, signal) => {
        cancel();
        this.#current = undefined;
        if (timedOut) resolve('TIMEOUT');
        else if (code === 0) resolve(null);
        else resolve(signal === null ? `EXIT_${code}` : signal);
      });
    });
  }
}
