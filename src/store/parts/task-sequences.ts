/**
 * The task sequences part of a store: blocks of task id numbers reserved per task kind, so the task
 * services of several processes on one store never hand out the same id.
 */
import type { TaskSequences } from '../session-store.js';
import type { StoreContext } from '../store-context.js';
import { releasedSequence } from '../transition-rules.js';
import { validateSequenceRelease, validateSequenceReservation } from '../validate-input.js';

export function createTaskSequences(context: StoreContext): TaskSequences {
  return {
    reserveTaskSequences(kind, after, count) {
      validateSequenceReservation(kind, after, count);
      // One transaction: two processes reserving at once get different blocks.
      return context.write('reserve task ids', ({ sequences }) => {
        const base = Math.max(sequences.get(kind), after);
        sequences.set(kind, base + count);
        return { first: base + 1, last: base + count };
      });
    },

    lastTaskSequence(kind) {
      validateSequenceReservation(kind, 0, 1);
      return context.read('read the last task id', ({ sequences }) => sequences.get(kind));
    },

    releaseTaskSequences(kind, block, lastUsed) {
      validateSequenceRelease(kind, block, lastUsed);
      context.write('release task ids', ({ sequences }) => {
        const next = releasedSequence(sequences.get(kind), block, lastUsed);
        if (next !== undefined) sequences.set(kind, next);
      });
    },
  };
}
