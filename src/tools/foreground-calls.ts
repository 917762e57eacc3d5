/**
 * The running foreground calls of a tool, found by tool-call id or task id, so a person (a key in a
 * terminal, a UI button) can move one to the background while the model waits on it.
 */
import type { TaskId } from '../tasks/index.js';

/** A running foreground call that can still be promoted. */
export interface ForegroundCall {
  readonly toolCallId: string;
  readonly taskId: TaskId;
}

export class ForegroundCalls {
  readonly #calls = new Map<string, ForegroundCall>();

  /** Registers a running call; the returned function forgets it (only if it is still this call). */
  track(call: ForegroundCall): () => void {
    this.#calls.set(call.toolCallId, call);
    return () => {
      if (this.#calls.get(call.toolCallId) === call) this.#calls.delete(call.toolCallId);
    };
  }

  /** The call with this tool-call id, else the one serving this task id. */
  find(key: string): ForegroundCall | undefined {
    return this.#calls.get(key) ?? [...this.#calls.values()].find((call) => call.taskId === key);
  }

  /** The calls running now, oldest first. */
  list(): ForegroundCall[] {
    return [...this.#calls.values()];
  }
}
