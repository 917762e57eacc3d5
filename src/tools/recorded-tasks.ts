/**
 * Tasks a store remembers that the task service no longer holds: those an earlier runtime ran, found again
 * when their session is resumed. `task_output` and `task_list` answer from them instead of saying
 * `TASK_NOT_FOUND` for work the store knows finished. A provider authorizes as the task service does: a
 * caller sees only its own session's records, and unauthorized looks like not found.
 */
import type { Caller, TaskSnapshot } from '../tasks/index.js';

export interface RecordedTaskOutput {
  /** The recorded task, rebuilt as a snapshot (finished: a live record of an earlier runtime is `lost`). */
  readonly snapshot: TaskSnapshot;
  /** The end of its output file, at most the bytes asked for; empty when none was kept. */
  readonly text: string;
  /** The size of its output file, when there is one. */
  readonly totalBytes?: number | undefined;
  /** Where the model's cursor stood (what it read already is not in `text`). Default 0. */
  readonly fromBytes?: number | undefined;
}

export interface RecordedTasks {
  /**
   * The finished task `taskId` recorded for `caller`'s session, with at most `maxBytes` of the end of its
   * output past the model's stored cursor (which then moves to the end); undefined when there is none the
   * caller may see.
   */
  read(taskId: string, caller: Caller, maxBytes: number): RecordedTaskOutput | undefined;
  /** The caller's finished recorded tasks, oldest first: at most `limit`, the newest kept. */
  list(caller: Caller, limit: number): readonly TaskSnapshot[];
}

/** How much of a recorded task's output file `task_output` reads when no output budget applies. */
export const RECORDED_OUTPUT_READ_BYTES = 64 * 1024;
