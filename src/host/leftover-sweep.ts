/**
 * At a runtime's start: non-durable process trees that a dead runtime's sessions left running (its
 * lifeline could not stop them: it was off, or died too) are stopped, whether or not those sessions are
 * ever resumed — a non-durable process must not outlive its runtime. Only records of sessions whose
 * holder is gone are looked at, each tree is recognised by pid, start time, boot and tag (by its tag alone
 * when its pid was not recorded yet) before anything is signalled. The records are left to the session's resume, which settles them: the tree's status file
 * says it was stopped here (`{"stoppedBy":"restart"}`).
 */
import {
  type ProcessSource,
  recognizeTree,
  removeLeftoverOutputDirectories,
  stopRecognizedTree,
  writeStatusFile,
} from '../process/index.js';
import { identityOfRecord } from '../session/reconcile.js';
import type { SessionHolder, SessionStore } from '../store/index.js';
import type { Clock, Logger } from '../tasks/index.js';

export interface LeftoverSweepOptions {
  readonly store: SessionStore;
  readonly source: ProcessSource;
  readonly isHolderLive: (holder: SessionHolder) => boolean;
  readonly clock: Clock;
  readonly killGraceMs: number;
  readonly logger: Logger;
}

/** Stops what is left; resolves with how many trees were found still running. */
export async function stopLeftoverTrees(options: LeftoverSweepOptions): Promise<number> {
  const { store, source } = options;
  const records = store
    .listTasks({ statuses: ['running', 'stopping'] })
    .filter((record) => record.process !== undefined && !record.durable && record.sessionId !== undefined);
  const holders = new Map<string, boolean>();
  const unheld = (sessionId: string): boolean => {
    let result = holders.get(sessionId);
    if (result === undefined) {
      const holder = store.getSession(sessionId)?.holder;
      result = holder === undefined || !options.isHolderLive(holder);
      holders.set(sessionId, result);
    }
    return result;
  };
  const stops: Promise<unknown>[] = [];
  for (const record of records) {
    if (!unheld(record.sessionId!)) continue;
    const identity = identityOfRecord(record);
    const found = recognizeTree(identity, source);
    if (found.state !== 'running' && found.state !== 'leftovers') continue;
    // Recorded first: the session's resume, whenever it comes, settles the task with why it ended.
    if (record.statusFile !== undefined) {
      writeStatusFile(record.statusFile, { kind: 'stopped', by: 'restart', at: options.clock.now() });
    }
    stops.push(stopRecognizedTree(identity, found, options));
  }
  await Promise.all(stops);
  return stops.length;
}

/** Where a producer's output directories go, and how their names begin. */
export interface OutputDirectoryPlace {
  readonly parent: string;
  readonly prefix: string;
}

/**
 * Removes the output directories dead runtimes left in `places` once nothing in them changed for
 * `maxAgeMs` (`removeLeftoverOutputDirectories`; each parent is read once); says in the log how many went.
 */
export function removeLeftoverOutput(
  places: readonly OutputDirectoryPlace[],
  options: { readonly maxAgeMs: number; readonly source: ProcessSource; readonly logger: Logger },
): number {
  const prefixes = new Map<string, string[]>();
  for (const { parent, prefix } of places) prefixes.set(parent, [...(prefixes.get(parent) ?? []), prefix]);
  let removed = 0;
  for (const [parent, names] of prefixes) {
    removed += removeLeftoverOutputDirectories({
      parent,
      prefixes: names,
      maxAgeMs: options.maxAgeMs,
      source: options.source,
    }).removed.length;
  }
  if (removed > 0) {
    options.logger.warn('removed the output directories of runtimes that died without removing them', {
      removed,
    });
  }
  return removed;
}
