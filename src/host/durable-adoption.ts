/**
 * How an assembled runtime re-attaches a durable bash command on resume: the task record's facts become
 * a `DurableAttachment`, and the bash producer re-registers the task under its id for the resumed
 * session's owner (`BashProducer.adopt`). A root whose start time was never recorded is looked up by its
 * tree's tag; when it cannot be found, nothing of the tree is ever signalled (the census starts after it).
 * A record written before the root's pid was known is re-attached only when its tag finds the root running.
 * A durable command a worker runs (its record names its job, `remoteJob`) is re-attached through Redis.
 */

import { type ProcessSource, parseEnvironmentTag, recognizeTree } from '../process/index.js';
import type { AdoptedBashTask, BashProducer } from '../producers/bash/bash-producer.js';
import type { BashFacts } from '../producers/bash/index.js';
import type { StoredTask } from '../store/index.js';
import type { Logger, Owner } from '../tasks/index.js';

/** A start time no process has: a census from it finds nothing, so nothing is signalled. */
const NOTHING_STARTED_AFTER = Number.MAX_SAFE_INTEGER;

export function durableAdopter(
  bash: BashProducer,
  source: ProcessSource,
  logger: Logger,
): (record: StoredTask, owner: Owner) => boolean {
  return (record, owner) => {
    if (record.kind !== 'bash') return false;
    const remoteJob = (record.detail as BashFacts).remoteJob;
    if (typeof remoteJob === 'string' && remoteJob !== '')
      return adoptRemote(bash, record, owner, remoteJob, logger);
    const facts = record.process;
    if (facts === undefined) return false;
    if (record.outputFile === undefined || record.statusFile === undefined) return false;
    const tag = parseEnvironmentTag(facts.tag);
    let pid = facts.pid;
    let startTime = facts.startTime;
    if (pid === undefined || startTime === undefined) {
      const found = recognizeTree({ pid, tag, bootId: facts.bootId }, source);
      if (found.state === 'running') ({ pid, startTime } = found.root);
      // Recorded before its pid was known, and its tag finds no root: nothing to re-attach to.
      else if (pid === undefined) return false;
      else startTime = NOTHING_STARTED_AFTER;
    }
    const detail = record.detail as BashFacts;
    adopt(bash, record, owner, logger, 'the durable command', {
      id: record.id,
      command: commandOf(record, detail),
      cwd: cwdOf(detail),
      startedAt: record.startedAt,
      pid,
      startTime,
      bootId: facts.bootId,
      tag,
      outputFile: record.outputFile,
      statusFile: record.statusFile,
      readOffset: record.readOffset,
    });
    return true;
  };
}

/** Re-registers a durable command a worker runs: the dispatcher re-attaches its job. */
function adoptRemote(
  bash: BashProducer,
  record: StoredTask,
  owner: Owner,
  job: string,
  logger: Logger,
): boolean {
  if (!bash.runsRemoteCommands) return false;
  const detail = record.detail as BashFacts;
  adopt(bash, record, owner, logger, 'the durable remote command', {
    remote: true,
    job,
    command: commandOf(record, detail),
    cwd: cwdOf(detail),
    startedAt: record.startedAt,
    readOffset: record.readOffset,
    worker: typeof detail.worker === 'string' ? detail.worker : undefined,
  });
  return true;
}

/** Re-registers `record` for `owner` on `attachment`; a failure is logged (the task stays as recorded). */
function adopt(
  bash: BashProducer,
  record: StoredTask,
  owner: Owner,
  logger: Logger,
  what: string,
  attachment: AdoptedBashTask['attachment'],
): void {
  bash
    .adopt({
      taskId: record.id,
      owner,
      label: record.label,
      detail: record.detail as BashFacts,
      traceparent: record.traceparent,
      attachment,
    })
    .catch((error: unknown) => {
      logger.warn(`task ${record.id}: re-attaching ${what} failed`, {
        error: error instanceof Error ? error.message : String(error),
      });
    });
}

const commandOf = (record: StoredTask, detail: BashFacts): string =>
  typeof detail.command === 'string' ? detail.command : record.label;

const cwdOf = (detail: BashFacts): string => (typeof detail.cwd === 'string' ? detail.cwd : '/');
