/**
 * The `backgroundWorks` projection: a pure reducer from background events to the works a viewer
 * shows, with five states. A state that nothing changed is returned as is (no delta).
 */
import type { ScheduleProgress, TaskStatus } from '../tasks/index.js';
import { type BackgroundEvent, isBackgroundTaskEvent } from './background-events.js';
import type { BackgroundTaskFacts } from './background-task-facts.js';
import { BADGE_WORK_KINDS, type BackgroundWorkKind } from './display-kind.js';

/**
 * `running` (running or stopping); `resultPending` (ended, the model not told yet: its notification waits
 * to be delivered); then the final states: `completed`, `failed` (failed, lost, timed out, spawn error,
 * output limit), `cancelled` (stopped on request).
 */
export type BackgroundWorkState = 'running' | 'resultPending' | 'completed' | 'failed' | 'cancelled';

/** The states an ended work takes once its result is no longer pending. */
export type BackgroundWorkEndState = Extract<BackgroundWorkState, 'completed' | 'failed' | 'cancelled'>;

export interface BackgroundWork {
  /** The task id (for a workflow run also its run id); never translated. */
  readonly workId: string;
  readonly sessionId: string | null;
  readonly kind: BackgroundWorkKind;
  readonly taskKind: string;
  readonly label: string;
  /** The tool call that started it, when known: a conversation view's card follows the work by it. */
  readonly toolUseId: string | null;
  readonly state: BackgroundWorkState;
  /**
   * How it ended: the state it has, or takes once its result is no longer pending; null while it runs.
   * A viewer shows it beside `resultPending`.
   */
  readonly endState: BackgroundWorkEndState | null;
  /** The registry status behind `state`. */
  readonly status: TaskStatus;
  /** A viewer may offer Stop. */
  readonly cancellable: boolean;
  readonly startedAt: number;
  readonly endedAt: number | null;
  readonly cancelRequestedAt: number | null;
  readonly pid: number | null;
  readonly outputBytes: number | null;
  readonly tail: string | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly error: string | null;
  /** The sandbox it runs in (`workspace-write, network off`); null when unconfined. */
  readonly sandbox: string | null;
  /** Its resource limits and their mechanism (`cgroup-v1: memory 512 MiB`); null without limits. */
  readonly limits: string | null;
  /** A schedule's firings (`fired` of `times`), next due time and missed-firing policy; null for other kinds. */
  readonly schedule: ScheduleProgress | null;
}

/** Port words that end a task as `killed` in the registry but are failures to a viewer. */
const FAILURE_REASONS = new Set([
  'timed_out',
  'spawn_error',
  'output_limit',
  'memory_limit',
  'cpu_limit',
  'pids_limit',
]);

/** The state a viewer shows for these facts. */
export function backgroundWorkStateOf(facts: BackgroundTaskFacts): BackgroundWorkState {
  const ended = endStateOf(facts);
  if (ended === null) return 'running';
  return facts.resultPending ? 'resultPending' : ended;
}

/** The state of an ended work once its result is no longer pending; null while it runs. */
export function endStateOf(facts: BackgroundTaskFacts): BackgroundWorkEndState | null {
  switch (facts.status) {
    case 'killed':
      return facts.reason !== null && FAILURE_REASONS.has(facts.reason) ? 'failed' : 'cancelled';
    case 'completed':
      return 'completed';
    case 'failed':
    case 'lost':
      return 'failed';
    case 'running':
    case 'stopping':
      return null;
  }
}

/** The work a viewer shows for these facts. */
export function toBackgroundWork(facts: BackgroundTaskFacts): BackgroundWork {
  const state = backgroundWorkStateOf(facts);
  return Object.freeze({
    workId: facts.taskId,
    sessionId: facts.sessionId,
    kind: facts.kind,
    taskKind: facts.taskKind,
    label: facts.label,
    toolUseId: facts.toolUseId,
    state,
    endState: endStateOf(facts),
    status: facts.status,
    cancellable: facts.cancellable,
    startedAt: facts.startedAt,
    endedAt: facts.endedAt,
    cancelRequestedAt: facts.cancelRequestedAt,
    pid: facts.pid,
    outputBytes: facts.outputBytes,
    tail: facts.tail,
    exitCode: facts.exitCode,
    signal: facts.signal,
    error: facts.error,
    sandbox: facts.sandbox,
    limits: facts.limits,
    schedule: facts.schedule,
  });
}

function sameWork(left: BackgroundWork, right: BackgroundWork): boolean {
  for (const key of Object.keys(left) as (keyof BackgroundWork)[]) {
    if (left[key] === right[key]) continue;
    if (key === 'schedule' && sameProgress(left.schedule, right.schedule)) continue;
    return false;
  }
  return true;
}

function sameProgress(left: ScheduleProgress | null, right: ScheduleProgress | null): boolean {
  if (left === null || right === null) return left === right;
  return (
    left.when === right.when &&
    left.fired === right.fired &&
    left.times === right.times &&
    left.nextAt === right.nextAt &&
    left.missed === right.missed
  );
}

/** Works by work id, in the order they first appeared. Treat as immutable. */
export interface BackgroundWorksState {
  readonly works: ReadonlyMap<string, BackgroundWork>;
}

export const EMPTY_BACKGROUND_WORKS: BackgroundWorksState = Object.freeze({ works: new Map() });

/** What one reduction changed; empty lists never leave the store. */
export interface BackgroundWorksDelta {
  readonly upserted: readonly BackgroundWork[];
  readonly removed: readonly string[];
}

/** Applies one event. Returns `state` itself when nothing a viewer sees changed. */
export function reduceBackgroundWorks(
  state: BackgroundWorksState,
  event: BackgroundEvent,
): BackgroundWorksState {
  return reduceWithDelta(state, event).state;
}

/** Applies one event and says what changed (nothing: the same state and an undefined delta). */
export function reduceWithDelta(
  state: BackgroundWorksState,
  event: BackgroundEvent,
): { readonly state: BackgroundWorksState; readonly delta: BackgroundWorksDelta | undefined } {
  // Copied on the first change only: most events of a busy feed change nothing a viewer sees.
  let next: Map<string, BackgroundWork> | undefined;
  const upserted: BackgroundWork[] = [];
  const removed: string[] = [];
  const put = (workId: string, work: BackgroundWork | undefined) => {
    const current = (next ?? state.works).get(workId);
    if (work === undefined) {
      if (current === undefined) return;
      next ??= new Map(state.works);
      next.delete(workId);
      removed.push(workId);
    } else if (current === undefined || !sameWork(current, work)) {
      next ??= new Map(state.works);
      next.set(workId, work);
      upserted.push(work);
    }
  };
  if (isBackgroundTaskEvent(event)) {
    put(event.taskId, toBackgroundWork(event));
  } else if (event.type === 'BackgroundTaskRemoved') {
    put(event.taskId, undefined);
  } else {
    const inScope = (work: BackgroundWork) => event.scope === 'all' || work.sessionId === event.sessionId;
    const present = new Set(event.tasks.map((facts) => facts.taskId));
    for (const work of state.works.values()) {
      if (inScope(work) && !present.has(work.workId)) put(work.workId, undefined);
    }
    for (const facts of event.tasks) put(facts.taskId, toBackgroundWork(facts));
  }
  if (next === undefined) return { state, delta: undefined };
  return { state: Object.freeze({ works: next }), delta: Object.freeze({ upserted, removed }) };
}

/** A session's works (null: ownerless work), oldest first. */
export function selectSessionWorks(state: BackgroundWorksState, sessionId: string | null): BackgroundWork[] {
  const works: BackgroundWork[] = [];
  for (const work of state.works.values()) if (work.sessionId === sessionId) works.push(work);
  return works.sort((left, right) => left.startedAt - right.startedAt);
}

/** Running bash + workflow + subagent works, of one session or (no argument) of all. */
export function countBadgeWorks(state: BackgroundWorksState, sessionId?: string | null): number {
  let count = 0;
  for (const work of state.works.values()) {
    if (sessionId !== undefined && work.sessionId !== sessionId) continue;
    if (work.state === 'running' && BADGE_WORK_KINDS.includes(work.kind)) count += 1;
  }
  return count;
}

/** Whether a session has any running work (the session list's activity marker). */
export function hasRunningWork(state: BackgroundWorksState, sessionId: string | null): boolean {
  for (const work of state.works.values()) {
    if (work.sessionId === sessionId && work.state === 'running') return true;
  }
  return false;
}
