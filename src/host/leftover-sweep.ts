/**
 * At a runtime's start: non-durable process trees that a dead runtime's sessions left running (its
 * lifeline could not stop them: it was off, or died too) are stopped, whether or not those sessions are
 * ever resumed — a non-durable process must not outlive its runtime. Only records of sessions whose
 * holder is gone are looked at, each tree is recognised by pid, start time, boot and tag before anything
 * is signalled. The records are left to the session's resume, which settles them: the tree's status file
 * says it was stopped here (`{"stoppedBy":"restart"}`).
 */
import {
  isDead,
  type ProcessSource,
  parseEnvironmentTag,
  recognizeTree,
  TreeTerminator,
  writeStatusFile,
} from '../process/index.js';
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
    const facts = record.process!;
    const tag = parseEnvironmentTag(facts.tag);
    const found = recognizeTree(
      { pid: facts.pid, startTime: facts.startTime, bootId: facts.bootId, tag },
      source,
    );
    if (found.state !== 'running' && found.state !== 'leftovers') continue;
    const startTime =
      found.state === 'running'
        ? found.rootStartTime
        : (facts.startTime ?? Math.min(...found.members.map((member) => member.startTime)));
    const root = { pid: facts.pid, startTime };
    // Recorded first: the session's resume, whenever it comes, settles the task with why it ended.
    if (record.statusFile !== undefined) {
      writeStatusFile(record.statusFile, { kind: 'stopped', by: 'restart', at: options.clock.now() });
    }
    stops.push(
      new TreeTerminator({
        root,
        source,
        clock: options.clock,
        killGraceMs: options.killGraceMs,
        tag,
        rootAlive: () => {
          const entry = source.read(root.pid);
          return entry !== undefined && entry.startTime === root.startTime && !isDead(entry);
        },
        newerPidsUntil: 0,
        logger: options.logger,
      }).terminate(),
    );
  }
  await Promise.all(stops);
  return stops.length;
}
