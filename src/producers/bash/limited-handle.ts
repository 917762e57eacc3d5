/**
 * A command under resource limits: the piped `ProcessHandle`, launched through the limiter's shim (its
 * group made just before the spawn), stopped when the limiter finds a breach, its exit facts telling the
 * limit (`memory_limit`, `cpu_limit`, `pids_limit`) instead of a bare SIGKILL, and its group removed once
 * its tree is gone — before `stopped` settles, so a settled command has left nothing behind.
 */
import { isAbsolute } from 'node:path';
import {
  isExecutableFile,
  type LaunchedProcess,
  type LimitBreach,
  type LimitedLaunch,
  type ProcessLauncher,
} from '../../process/index.js';
import type { TaskOutputStream } from '../../tasks/index.js';
import type { CommandHandle, CommandProcessFacts, OutputSnapshot } from './command-handle.js';
import type { OutputRead } from './command-output.js';
import type { ExitFacts } from './exit-facts.js';
import type { ProcessHandle } from './process-handle.js';

/**
 * `inner` with each launch rewritten through `limits` (the group is made then), and the exit of the first
 * process read against the counters at once (an OOM-killed shell exits before the next poll).
 */
export function limitedLauncher(inner: ProcessLauncher, limits: LimitedLaunch): ProcessLauncher {
  return {
    launch(request) {
      // The shim would report a missing program as its own exit 127; the spawn reports it as it always did.
      if (isAbsolute(request.file) && !isExecutableFile(request.file)) {
        throw Object.assign(new Error(`spawn ${request.file} ENOENT`), {
          code: 'ENOENT',
          errno: -2,
          syscall: `spawn ${request.file}`,
          path: request.file,
        });
      }
      let confined: ReturnType<LimitedLaunch['confine']>;
      try {
        confined = limits.confine(request);
      } catch (error) {
        const problem = error instanceof Error ? error.message : String(error);
        throw Object.assign(new Error(`the command's resource-limit group could not be made: ${problem}`), {
          code: (error as NodeJS.ErrnoException).code,
        });
      }
      const launched: LaunchedProcess = inner.launch(confined);
      launched.once('exit', (_code, signal) => limits.check(signal));
      return launched;
    },
  };
}

export class LimitedHandle implements CommandHandle {
  readonly #inner: ProcessHandle;
  readonly #limits: LimitedLaunch;
  #facts: ExitFacts | undefined;
  /** A caller's cancel came before any breach: the stop is the caller's. */
  #cancelledFirst = false;
  readonly stopped: Promise<ExitFacts>;

  constructor(inner: ProcessHandle, limits: LimitedLaunch) {
    this.#inner = inner;
    this.#limits = limits;
    limits.onBreach((breach) => {
      if (inner.running) inner.cancel(`stopped for ${breach.reason}`);
    });
    this.stopped = inner.stopped.then(async (facts) => {
      await limits.release();
      this.#facts = this.#withBreach(facts, limits.breach);
      return this.#facts;
    });
  }

  #withBreach(facts: ExitFacts, breach: LimitBreach | undefined): ExitFacts {
    if (breach === undefined) return facts;
    const ours = facts.reason === 'completed' || (facts.reason === 'cancelled' && !this.#cancelledFirst);
    if (!ours) return facts;
    return Object.freeze({
      ...facts,
      reason: breach.reason,
      limitBreach: breach,
      cancelMessage: facts.reason === 'cancelled' ? null : facts.cancelMessage,
    });
  }

  get id(): string {
    return this.#inner.id;
  }
  get command(): string {
    return this.#inner.command;
  }
  get cwd(): string {
    return this.#inner.cwd;
  }
  get startedAt(): number {
    return this.#inner.startedAt;
  }
  get durable(): boolean {
    return false;
  }
  get spawned(): Promise<boolean> {
    return this.#inner.spawned;
  }
  get outputFileReady(): Promise<string | undefined> {
    return this.#inner.outputFileReady;
  }
  get pid(): number | undefined {
    return this.#inner.pid;
  }
  get tag() {
    return this.#inner.tag;
  }
  get bootId(): string | undefined {
    return this.#inner.bootId;
  }
  get outputFile(): string | undefined {
    return this.#inner.outputFile;
  }
  get statusFile(): string | undefined {
    return this.#inner.statusFile;
  }
  get outputBytes(): number {
    return this.#inner.outputBytes;
  }
  get readOffset(): number {
    return this.#inner.readOffset;
  }
  /** True until `stopped` settles (the group is removed after the tree is gone). */
  get running(): boolean {
    return this.#facts === undefined;
  }
  get timeoutMs(): number | undefined {
    return this.#inner.timeoutMs;
  }
  get exit(): ExitFacts | undefined {
    return this.#facts;
  }
  /** The limit it went past, once one was found (before `stopped` settles). */
  get breach(): LimitBreach | undefined {
    return this.#limits.breach;
  }
  processFacts(): CommandProcessFacts | undefined {
    return this.#inner.processFacts();
  }
  ensureOutputFile(): Promise<string | undefined> {
    return this.#inner.ensureOutputFile();
  }
  read(limitBytes?: number): OutputRead {
    return this.#inner.read(limitBytes);
  }
  outputStream(): TaskOutputStream | undefined {
    return this.#inner.outputStream();
  }
  snapshot(limitBytes?: number): OutputSnapshot {
    return { ...this.#inner.snapshot(limitBytes), running: this.running };
  }
  render(limitBytes: number, stderrPrefix: string): { text: string; skippedBytes: number } {
    return this.#inner.render(limitBytes, stderrPrefix);
  }
  onOutput(listener: (outputBytes: number) => void): () => void {
    return this.#inner.onOutput(listener);
  }
  cancel(message?: string): void {
    if (this.#limits.breach === undefined && this.#inner.running) this.#cancelledFirst = true;
    this.#inner.cancel(message);
  }
  setTimeout(timeoutMs: number | undefined): void {
    this.#inner.setTimeout(timeoutMs);
  }
}
