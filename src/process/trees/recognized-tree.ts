/**
 * Stopping a tree recognised after the runtime that started it was gone (`recognizeTree`): a later
 * runtime's start, a resumed session, a dashboard over the data directory. The terminator's root is the
 * recorded root while it runs; once it ended (or when no pid was recorded), the oldest member stands in
 * for it, and the tag finds the rest. Nothing is signalled that the census did not attribute to the tree.
 */
import type { Clock } from '../../tasks/clock.js';
import type { Logger } from '../../tasks/logger.js';
import type { ProcessIdentity, Recognition } from './process-identity.js';
import { isDead, type ProcessSource } from './process-table.js';
import { type TerminationReport, TreeTerminator } from './process-terminator.js';
import type { TreeRoot } from './process-tree.js';

export interface RecognizedTreeStopOptions {
  readonly source: ProcessSource;
  readonly clock: Clock;
  /** SIGTERM → SIGKILL grace. */
  readonly killGraceMs: number;
  readonly logger: Logger;
}

/** A recognition that found something of the tree still running. */
export type RunningRecognition = Recognition & { readonly state: 'running' | 'leftovers' };

/** SIGTERM now, SIGKILL after the grace, to what is left of the tree; resolves once nothing is. */
export function stopRecognizedTree(
  identity: ProcessIdentity,
  recognition: RunningRecognition,
  options: RecognizedTreeStopOptions,
): Promise<TerminationReport> {
  const root = rootOf(identity, recognition);
  const { source } = options;
  return new TreeTerminator({
    root,
    source,
    clock: options.clock,
    killGraceMs: options.killGraceMs,
    tag: identity.tag,
    rootAlive: () => {
      const entry = source.read(root.pid);
      return entry !== undefined && entry.startTime === root.startTime && !isDead(entry);
    },
    newerPidsUntil: 0,
    logger: options.logger,
  }).terminate();
}

function rootOf(identity: ProcessIdentity, recognition: RunningRecognition): TreeRoot {
  if (recognition.state === 'running') return recognition.root;
  let oldest = recognition.members[0]!;
  for (const member of recognition.members) if (member.startTime < oldest.startTime) oldest = member;
  if (identity.pid === undefined) return { pid: oldest.pid, startTime: oldest.startTime };
  // The recorded root ended: its pid still names the group and session its members may be in.
  return { pid: identity.pid, startTime: identity.startTime ?? oldest.startTime };
}
