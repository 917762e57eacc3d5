/**
 * Task ids over the session store: the blocks of ids a task service reserves there, so services of
 * several processes on one data directory never hand out the same id.
 */
import type { SequenceBlocks } from '../registry/index.js';
import type { SessionStore } from '../store/session-store.js';
import { parseTaskId } from '../tasks/index.js';

/** How many ids of one kind a task service reserves in the store at a time. */
export const TASK_ID_BLOCK_SIZE = 100;

/**
 * Task id blocks reserved in `store` (`TaskServiceOptions.sequenceBlocks`): services of several processes
 * on one data directory never hand out the same id, and a service that ends gives back what it did not
 * use, so the next one continues right after its last id.
 */
export function storeSequenceBlocks(store: SessionStore, blockSize = TASK_ID_BLOCK_SIZE): SequenceBlocks {
  return {
    reserve: (kind, after) => store.reserveTaskSequences(kind, after, blockSize),
    release: (kind, block, lastUsed) => store.releaseTaskSequences(kind, block, lastUsed),
  };
}

/**
 * The highest sequence per kind among stored task ids, read from every record. The runtimes no longer
 * need it: a saved record raises the store's `task_sequences` (migration 10 seeded it from older records).
 */
export function lastSequences(store: SessionStore): Record<string, number> {
  const sequences: Record<string, number> = {};
  for (const task of store.listTasks()) {
    const parsed = parseTaskId(task.id);
    if (parsed && parsed.sequence > (sequences[parsed.kind] ?? 0)) sequences[parsed.kind] = parsed.sequence;
  }
  return sequences;
}
