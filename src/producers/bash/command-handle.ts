/**
 * What the bash producer and tool use of a running command, whichever way it runs: piped through the
 * runtime (`ProcessHandle`) or durable, writing its output file directly and outliving the runtime
 * (`DurableHandle`). `stopped` settles once the whole tree is gone; it never rejects.
 */

import type { EnvironmentTag } from '../../process/index.js';
import type { TaskOutputStream } from '../../tasks/index.js';
import type { BashFacts } from './bash-facts.js';
import type { OutputRead } from './command-output.js';
import type { ExitFacts } from './exit-facts.js';

/** A non-consuming view for UIs: the newest output, at most 8192 bytes. */
export interface OutputSnapshot {
  readonly text: string;
  /** Bytes before `text` that the snapshot leaves out. */
  readonly skippedBytes: number;
  readonly outputBytes: number;
  readonly outputFile: string | null;
  readonly running: boolean;
}

/** What recognises a command's process tree after the runtime that started it is gone. */
export interface CommandProcessFacts {
  readonly pid: number;
  /** The root's start time in clock ticks after boot (`/proc/<pid>/stat` field 22); undefined without /proc. */
  readonly startTime: number | undefined;
  readonly bootId: string | undefined;
  /** The tree's environment tag, when tagging is on. */
  readonly tag: EnvironmentTag | undefined;
}

export interface CommandHandle {
  readonly id: string;
  readonly command: string;
  readonly cwd: string;
  readonly startedAt: number;
  /** True for a command that keeps running when the runtime dies. */
  readonly durable: boolean;
  /** Resolves with true once the command runs, false when it could not be started. */
  readonly spawned: Promise<boolean>;
  /** Resolves once the command and every process it left are gone and the output is read; never rejects. */
  readonly stopped: Promise<ExitFacts>;
  /** Resolves with the output file's path once it exists, or undefined when the command stopped without one. */
  readonly outputFileReady: Promise<string | undefined>;
  readonly pid: number | undefined;
  /**
   * The environment tag every process of the tree carries, set before it is spawned: what recognises the
   * tree while its pid is not known yet. Undefined when tagging is off or the command runs elsewhere.
   */
  readonly tag: EnvironmentTag | undefined;
  /** The boot the command runs in (`/proc/sys/kernel/random/boot_id`); undefined when it runs elsewhere. */
  readonly bootId: string | undefined;
  readonly outputFile: string | undefined;
  /** Where the tree's exit status is recorded by something that outlives the runtime, when anything does. */
  readonly statusFile: string | undefined;
  readonly outputBytes: number;
  /** Bytes of output consuming reads have returned or passed over (the model's cursor). */
  readonly readOffset: number;
  /** True until `stopped` settles. */
  readonly running: boolean;
  /** The current deadline, in milliseconds after the start; undefined: none. */
  readonly timeoutMs: number | undefined;
  readonly exit: ExitFacts | undefined;
  /** Reads the root's facts (once the command runs): pid, exact start time, boot, tag. */
  processFacts(): CommandProcessFacts | undefined;
  /** Creates the output file now if nothing did, so its path can be shown. */
  ensureOutputFile(): Promise<string | undefined>;
  /** Consuming read of the newest unread output (at most `limitBytes`, capped by `maxReadBytes`). */
  read(limitBytes?: number): OutputRead;
  /**
   * The output as its file holds it, for any number of non-consuming readers; undefined when there is no
   * output file (the command never started).
   */
  outputStream(): TaskOutputStream | undefined;
  /** Non-consuming view of the newest output, at most 8192 bytes. */
  snapshot(limitBytes?: number): OutputSnapshot;
  /** The newest output with stderr lines prefixed; moves the consuming cursor to the end. */
  render(limitBytes: number, stderrPrefix: string): { text: string; skippedBytes: number };
  /** Calls `listener` with the total byte count each time output arrives. Returns an unsubscribe. */
  onOutput(listener: (outputBytes: number) => void): () => void;
  /** Requests termination of the whole tree. Synchronous and idempotent. */
  cancel(message?: string): void;
  /** Sets the deadline to `timeoutMs` after the start (undefined removes it). */
  setTimeout(timeoutMs: number | undefined): void;
  /**
   * Facts learnt while the command runs elsewhere (a remote command's worker), for the task's detail.
   * Absent on handles of commands that run here. Returns an unsubscribe.
   */
  onDetail?(listener: (patch: Partial<BashFacts>) => void): () => void;
}
