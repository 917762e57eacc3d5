/**
 * Reconciling a resumed session's task records with what really runs, before the session accepts work.
 * A record an earlier runtime left `running` or `stopping` is checked — never assumed — against the
 * process table and its exit-status file, using what the record kept (pid, start time, boot id, tag):
 *
 * - a durable command still running, or ended with its status captured: re-attached (`adoptDurable`), so
 *   it keeps its id, owner and read cursor, and its end is notified once, as any other;
 * - a non-durable tree still running (its lifeline did not stop it): stopped now, settled `killed`
 *   with reason `runtime_restarted`;
 * - a tree the lifeline stopped when its runtime died: settled `killed` with reason `runtime_died`;
 * - what cannot be known: `lost`, with the case named (`LostCase`) so the model's notice says which.
 *
 * A durable record without process facts (its command runs on a worker, not here) is handed to
 * `adoptDurable` as it is: whether it still runs is asked where it runs. Other records without process
 * facts (subagents, workflows: they ran inside the runtime that died) are left to the caller, which
 * marks them lost.
 */
import {
  outputFileBeside,
  type ProcessIdentity,
  type ProcessSource,
  parseEnvironmentTag,
  type RunningRecognition,
  readStatusFile,
  recognizeTree,
  stopRecognizedTree,
} from '../process/index.js';
import type { JsonObject } from '../store/json.js';
import type { StoredTask } from '../store/records.js';
import type { SessionStore } from '../store/session-store.js';
import { taskRecordInput } from '../store/task-record-input.js';
import {
  type Clock,
  createTrustedCaller,
  type Logger,
  type Owner,
  type TaskHooks,
  type TaskId,
  type TaskOutcome,
  type TaskService,
} from '../tasks/index.js';
import { readFileTail } from '../text/index.js';

/** Which case a task found `lost` on resume is: what the notice tells the model. */
export type LostCase =
  /** The machine restarted since the task started: nothing of it runs, its pids name nothing of it. */
  | 'machine_restarted'
  /** Its process ended while no runtime watched it, and nothing recorded its exit status. */
  | 'ended_unwatched'
  /** A durable command ended while no runtime watched it, and its wrapper was killed before writing its status. */
  | 'status_not_captured'
  /** Its pid now names another process (left alone): the task's own process ended, its status unknown. */
  | 'pid_reused'
  /** Its record holds too little to recognise its process (no start time or tag, or no process table). */
  | 'unrecognizable';

export const LOST_CASES: readonly LostCase[] = [
  'machine_restarted',
  'ended_unwatched',
  'status_not_captured',
  'pid_reused',
  'unrecognizable',
];

/** The diagnosis written to a lost record's `error`, per case. */
export const LOST_CASE_ERRORS: Readonly<Record<LostCase, string>> = Object.freeze({
  machine_restarted:
    'The machine restarted since this task started: its process is gone and its result is unknown.',
  ended_unwatched:
    'Its process ended while no runtime watched it (the runtime that started it had died), and its exit status was not captured.',
  status_not_captured:
    'This durable command ended while no runtime watched it, and its exit status was not captured (its wrapper was killed).',
  pid_reused:
    'Its process ended while no runtime watched it; its pid now names another process, which was left alone. Its exit status is unknown.',
  unrecognizable:
    'Its record does not hold enough to recognise its process after the restart, so it was neither checked nor stopped; its result is unknown.',
});

export interface ReconcileContext {
  readonly store: SessionStore;
  readonly tasks: TaskService;
  readonly source: ProcessSource;
  readonly clock: Clock;
  readonly logger: Logger;
  /** SIGTERM → SIGKILL grace when a leftover tree is stopped. */
  readonly killGraceMs: number;
  /**
   * Re-registers a durable task for the resumed session's owner (the bash producer's `adopt`); false when
   * nothing can (no producer for its kind). Absent: durable tasks are treated as non-durable.
   */
  readonly adoptDurable?: (record: StoredTask, owner: Owner) => boolean;
  /**
   * Re-arms a live schedule for the resumed session's owner from its stored definition (the schedule
   * producer's `resume`); false when there is none. Absent: a live schedule record is left to the
   * caller, which marks it lost.
   */
  readonly adoptSchedule?: (record: StoredTask, owner: Owner) => boolean;
}

/** What reconciling decided: the records taken over, and the step that registers them once the session is open. */
export interface Reconciliation {
  /** Ids of records that stay live until `adopt` re-registers them. */
  readonly kept: readonly string[];
  /** Re-registers the taken-over tasks for the opened session's owner. */
  adopt(owner: Owner): void;
}

type Decision =
  | { readonly kind: 'adopt' }
  | { readonly kind: 'schedule' }
  | { readonly kind: 'stop'; readonly recognition: RunningRecognition }
  | { readonly kind: 'settle'; readonly outcome: TaskOutcome }
  | { readonly kind: 'lost'; readonly lostCase: LostCase };

/** How much of a settled task's output file `task_output` returns. */
const FINAL_OUTPUT_BYTES = 16 * 1024;
const reconciler = createTrustedCaller('reconcile');

/**
 * Checks every live record of the session that names a process, writes the lost ones (with their case)
 * and returns the rest to adopt. Call it after the session is acquired and before it is opened.
 */
export function reconcileSessionTasks(sessionId: string, context: ReconcileContext): Reconciliation {
  const records = context.store.listTasks({ sessionId, statuses: ['running', 'stopping'] });
  const live = records.filter((record) => record.process !== undefined || record.durable);
  const plans: Array<{ record: StoredTask; decision: Decision }> = [];
  const untouched: string[] = [];
  // A schedule ran inside the runtime that stopped; its definition in the store re-arms it.
  if (context.adoptSchedule !== undefined) {
    for (const record of records) {
      if (record.kind !== 'schedule' || record.process !== undefined || record.durable) continue;
      if (context.store.getSchedule(sessionId, record.id) === undefined) continue;
      plans.push({ record, decision: { kind: 'schedule' } });
    }
  }
  for (const record of live) {
    if (record.durable && context.adoptDurable === undefined) {
      // Nothing here can re-attach it, and it may well run on: it is neither stopped nor called lost.
      context.logger.warn(`task ${record.id} is durable, but nothing in this runtime can re-attach it`, {
        sessionId,
      });
      untouched.push(record.id);
      continue;
    }
    const decision = decide(record, context);
    if (decision.kind === 'lost') writeLost(record, decision.lostCase, context);
    else plans.push({ record, decision });
  }
  return {
    kept: [...untouched, ...plans.map((plan) => plan.record.id)],
    adopt(owner) {
      for (const { record, decision } of plans) take(record, decision, owner, context);
    },
  };
}

/**
 * What a live record whose runtime is gone really is, checked now: its tree (or something it left)
 * still runs; it exited with a recorded status; it ended in a way that is known (the lifeline stopped it,
 * or it was stopped on request); or it is lost, and which case that is. Reads the status file and the
 * process table; changes nothing. The dashboard over a data directory shows records by it.
 */
export type Verdict =
  | { readonly kind: 'runs'; readonly recognition: RunningRecognition }
  | { readonly kind: 'exited'; readonly exitCode: number }
  | { readonly kind: 'ended'; readonly outcome: TaskOutcome }
  | { readonly kind: 'lost'; readonly lostCase: LostCase };

export function judgeLeftTask(record: StoredTask, source: ProcessSource): Verdict {
  if (record.process === undefined) return { kind: 'lost', lostCase: 'unrecognizable' };
  const recorded = recordedEnd(record);
  if (recorded !== undefined) return recorded;
  const recognition = recognizeTree(identityOfRecord(record), source);
  if (recognition.state === 'gone') {
    // What outlives a runtime writes the status file before the tree ends (the lifeline before its first
    // signal, the durable wrapper before it exits): one written after the read above and before the tree
    // was gone is there now, and says how it ended.
    const late = recordedEnd(record);
    if (late !== undefined) return late;
  }
  switch (recognition.state) {
    case 'other_boot':
      return { kind: 'lost', lostCase: 'machine_restarted' };
    case 'unknown':
      return { kind: 'lost', lostCase: 'unrecognizable' };
    case 'running':
    case 'leftovers':
      return { kind: 'runs', recognition };
    case 'gone':
      if (record.status === 'stopping') {
        // Stopped while no runtime held it (a person's Stop from the dashboard): it is gone, as asked.
        return {
          kind: 'ended',
          outcome: {
            status: 'killed',
            detail: { reason: 'cancelled' },
            error: 'Stopped while no runtime held it.',
          },
        };
      }
      if (record.durable) return { kind: 'lost', lostCase: 'status_not_captured' };
      return { kind: 'lost', lostCase: recognition.pidReused ? 'pid_reused' : 'ended_unwatched' };
  }
}

function decide(record: StoredTask, context: ReconcileContext): Decision {
  // Nothing here to check: it runs elsewhere, and re-attaching it asks there.
  if (record.process === undefined) return { kind: 'adopt' };
  const verdict = judgeLeftTask(record, context.source);
  switch (verdict.kind) {
    case 'runs':
      return record.durable ? { kind: 'adopt' } : { kind: 'stop', recognition: verdict.recognition };
    case 'exited':
      if (record.durable) return { kind: 'adopt' };
      return {
        kind: 'settle',
        outcome: {
          status: verdict.exitCode === 0 ? 'completed' : 'failed',
          detail: { reason: 'completed', exitCode: verdict.exitCode },
        },
      };
    case 'ended':
      return { kind: 'settle', outcome: verdict.outcome };
    case 'lost':
      return { kind: 'lost', lostCase: verdict.lostCase };
  }
}

/** The end the task's status file records (the lifeline's stop, a restart's, an exit), if it has one. */
function recordedEnd(record: StoredTask): Verdict | undefined {
  const recorded = record.statusFile === undefined ? undefined : readStatusFile(record.statusFile);
  if (recorded?.kind === 'stopped') {
    return {
      kind: 'ended',
      outcome:
        recorded.by === 'lifeline'
          ? {
              status: 'killed',
              error:
                "Stopped by Errand's lifeline when the runtime that started it died (it was still running then).",
              detail: { reason: 'runtime_died', stoppedAt: recorded.at },
            }
          : {
              status: 'killed',
              error:
                'It was still running when a new runtime started after the one that started it had died, so it was stopped: work that is not durable does not outlive its runtime.',
              detail: { reason: 'runtime_restarted', stoppedAt: recorded.at },
            },
    };
  }
  if (recorded?.kind === 'exited') {
    if (record.status === 'stopping') {
      // Someone asked it to stop while no runtime held it (a person's Stop), and it exited as asked.
      return {
        kind: 'ended',
        outcome: {
          status: 'killed',
          detail: { reason: 'cancelled', exitCode: recorded.exitCode },
          error: 'Stopped while no runtime held it.',
        },
      };
    }
    return { kind: 'exited', exitCode: recorded.exitCode };
  }
  return undefined;
}

/** What a live record kept of its process tree, as `recognizeTree` takes it. */
export function identityOfRecord(record: StoredTask): ProcessIdentity {
  const facts = record.process!;
  return {
    pid: facts.pid,
    startTime: facts.startTime,
    bootId: facts.bootId,
    tag: parseEnvironmentTag(facts.tag),
  };
}

function writeLost(record: StoredTask, lostCase: LostCase, context: ReconcileContext): void {
  try {
    context.store.upsertTask({
      ...taskRecordInput(record),
      status: 'lost',
      error: LOST_CASE_ERRORS[lostCase],
      detail: { ...record.detail, lostCase },
      endedAt: record.endedAt ?? context.clock.now(),
    });
  } catch (error) {
    context.logger.warn(`task ${record.id}: recording that it is lost failed`, { error: messageOf(error) });
  }
}

/** A live schedule that could not be re-armed: its record settles lost, its definition goes. */
function writeLostSchedule(record: StoredTask, context: ReconcileContext): void {
  try {
    context.store.transaction(() => {
      context.store.upsertTask({
        ...taskRecordInput(record),
        status: 'lost',
        error: SCHEDULE_NOT_RESUMED_ERROR,
        endedAt: record.endedAt ?? context.clock.now(),
      });
      context.store.removeSchedule(record.sessionId ?? '', record.id);
    });
  } catch (error) {
    context.logger.warn(`schedule ${record.id}: recording that it is lost failed`, {
      error: messageOf(error),
    });
  }
}

const SCHEDULE_NOT_RESUMED_ERROR =
  'The runtime that ran this schedule stopped, and the one that resumed its session could not re-arm it from its stored definition; it fires no more.';

/** Re-registers one taken-over record; if registering fails, its record is settled in the store directly. */
function take(record: StoredTask, decision: Decision, owner: Owner, context: ReconcileContext): void {
  if (decision.kind === 'schedule') {
    let resumed = false;
    try {
      resumed = context.adoptSchedule?.(record, owner) === true;
    } catch (error) {
      context.logger.warn(`schedule ${record.id}: re-arming it after the restart failed`, {
        error: messageOf(error),
      });
    }
    if (!resumed) writeLostSchedule(record, context);
    return;
  }
  if (decision.kind === 'adopt') {
    if (!context.adoptDurable?.(record, owner)) {
      writeLost(record, 'unrecognizable', context);
      return;
    }
    // A stop asked for while no runtime held it is carried out now.
    if (record.status === 'stopping') {
      context.tasks
        .kill(record.id, reconciler, 'stopped while no runtime held it', {
          initiator: record.stopInitiator ?? 'user',
        })
        .catch(() => {});
    }
    return;
  }
  const settled = decision.kind === 'settle' ? decision.outcome : undefined;
  let stop: (() => Promise<TaskOutcome>) | undefined;
  if (decision.kind === 'stop') stop = () => stopLeftover(record, decision.recognition, context);
  const outcome = settled !== undefined ? Promise.resolve(settled) : stop!();
  const hooks: TaskHooks = {
    // Already ending (being stopped, or ended): a second stop has nothing to add.
    cancel: () => {},
    done: outcome,
    // A record written before its output file was stored finds it beside its status file.
    readOutput: () =>
      finalOutput(
        record.outputFile ??
          (record.statusFile === undefined ? undefined : outputFileBeside(record.statusFile)),
      ),
  };
  const registered = context.tasks.start({
    kind: record.kind,
    label: record.label,
    owner,
    background: true,
    resumeId: record.id as TaskId,
    detail: { ...record.detail, adopted: true },
    // The stop continues the trace of the task that ran before the restart.
    ...(record.traceparent === undefined ? {} : { traceparent: record.traceparent }),
    run: () => hooks,
  });
  // Registered synchronously; who asked for the stop is kept before the end settles in a later step.
  if (record.stopInitiator !== undefined) {
    try {
      context.tasks.setStopInitiator(record.id, record.stopInitiator, reconciler);
    } catch {
      // Not registered: the fallback below records the end.
    }
  }
  registered.catch(async (error: unknown) => {
    context.logger.warn(`task ${record.id}: re-registering it after the restart failed`, {
      error: messageOf(error),
    });
    const end = await outcome;
    try {
      context.store.upsertTask({
        ...taskRecordInput(record),
        status: end.status,
        ...(end.error === undefined ? {} : { error: end.error }),
        detail: { ...record.detail, ...end.detail } as JsonObject,
        endedAt: context.clock.now(),
      });
    } catch (failure) {
      context.logger.warn(`task ${record.id}: recording its end failed`, { error: messageOf(failure) });
    }
  });
}

/** Stops a non-durable tree an earlier runtime left running: it must not outlive that runtime. */
async function stopLeftover(
  record: StoredTask,
  recognition: RunningRecognition,
  context: ReconcileContext,
): Promise<TaskOutcome> {
  const report = await stopRecognizedTree(identityOfRecord(record), recognition, {
    source: context.source,
    clock: context.clock,
    killGraceMs: context.killGraceMs,
    logger: context.logger,
  });
  return {
    status: 'killed',
    error:
      recognition.state === 'running'
        ? 'It was still running when its session was resumed after its runtime died, so it was stopped: work that is not durable does not outlive its runtime.'
        : 'Its process had ended while no runtime watched it, and what it left running was stopped when its session was resumed.',
    detail: {
      reason: 'runtime_restarted',
      exitCode: null,
      signalledProcesses: report.signalled,
      escalated: report.escalated,
      killSignal: report.escalated ? 'SIGKILL' : 'SIGTERM',
      survivors: [...report.survivors],
    },
  };
}

function finalOutput(outputFile: string | undefined): string {
  if (outputFile === undefined) return '';
  return readFileTail(outputFile, FINAL_OUTPUT_BYTES)?.text ?? '';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
