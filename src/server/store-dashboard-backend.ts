/**
 * A DashboardBackend over the shared data directory, for `errand serve`: it shows the work of every
 * runtime that records into the store — `errand mcp`, `errand chat`, a harness — from another process,
 * with no listener in those runtimes. Sessions and task records come from the store; events come from
 * polling it every `pollMs` (there is no cross-process event), emitted only when a viewer would see a
 * change; byte counts and output come from each task's output file. A task recorded running whose
 * session holder is gone is checked against the process table and its exit-status file (the resume's
 * own judgement, `judgeLeftTask`): shown running while its process runs (a durable command, or a tree
 * nothing stopped), with its recorded end once it ended, `lost` only when its end cannot be known.
 * Stop submits a command to the session's live holder, which polls for it (`commandPollMs` of
 * `createErrandRuntime`), and waits up to `stopTimeoutMs` for its answer: acknowledged, rejected with a
 * reason, or — no answer in time — an error (the command is expired), never a fake success. Work whose
 * holder is gone is stopped here: its record is marked `stopping` (initiator `user`) and its tree is
 * terminated with the same start-time checks as every stop; the next resume settles it.
 * "Move to background" of a running foreground command (recorded in the store too) is a command of its
 * own the same way. The conversation is the store's message log.
 */
import { statSync } from 'node:fs';
import {
  type BackgroundEvent,
  type BackgroundEventFeed,
  type BackgroundEventListener,
  type BackgroundTaskEventType,
  type BackgroundTaskFacts,
  type BackgroundWorksLevel,
  displayKindOf,
  EventRing,
  isResultPending,
  isSupersededDetail,
  type ReplayResult,
  sameFacts,
  worksLevel,
} from '../events/index.js';
import {
  limitsSummaryOf,
  memoizedSource,
  type ProcessSource,
  procfsSource,
  sandboxSummaryOf,
  stopRecognizedTree,
} from '../process/index.js';
import { identityOfRecord, judgeLeftTask, LOST_CASE_ERRORS, type Verdict } from '../session/reconcile.js';
import { isHolderLive } from '../session/session-holder.js';
import {
  type RuntimeCommandType,
  type SessionHolder,
  type SessionStore,
  type StoredTask,
  taskRecordInput,
} from '../store/index.js';
import {
  ErrandError,
  isTerminalStatus,
  type Logger,
  monotonicNow,
  type OutputCursor,
  systemClock,
  type TaskId,
  taskFact,
} from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';
import { readFileTail } from '../text/index.js';
import { pageFromStore } from './conversation-endpoint.js';
import type {
  DashboardBackend,
  ForegroundWork,
  MessagePage,
  MessagePageRequest,
  MoveRejectionReason,
  MoveToBackgroundResult,
  OutputSnapshot,
  StopBackgroundWorkResult,
  StopRejectionReason,
} from './dashboard-backend.js';
import { openFileOutputCursor, openStreamOutputCursor } from './file-output-cursor.js';
import { type RemoteWorkAccess, remoteJobOf } from './remote-work.js';
import { consoleDashboardLogger } from './server-options.js';
import { createSessionSummaries } from './session-summaries.js';
import { StoreSessionReads } from './store-session-reads.js';

/** The options of `createStoreDashboardBackend`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const storeDashboardBackendOptions = defineOptions('createStoreDashboardBackend', {
  /** The store the working runtimes record into (for `errand serve`: the SQLite store of the data directory). */
  store: option.required(option.shaped<SessionStore>('a SessionStore', ['listTasks', 'submitCommand'])),
  /** How often the store is read for task changes, in ms (1 to 3600000). Default 1000. */
  pollMs: option.integer({ min: 1, max: 3_600_000, default: 1000 }),
  /** How long a Stop waits for the holding runtime's answer, in ms (1 to 600000). Default 5000. */
  stopTimeoutMs: option.integer({ min: 1, max: 600_000, default: 5000 }),
  /** How often a waiting Stop re-reads its command, in ms (1 to 60000). Default 50. */
  stopPollMs: option.integer({ min: 1, max: 60_000, default: 50 }),
  /**
   * How often a live output reader waiting for more looks at the output file's size, in ms (1 to 60000).
   * Default 250.
   */
  outputPollMs: option.integer({ min: 1, max: 60_000, default: 250 }),
  /** The most bytes one output read returns (4 to 16777216). Default 1048576. */
  maxOutputReadBytes: option.integer({ min: 4, max: 16 * 1024 * 1024, default: 1024 * 1024 }),
  /** Events kept for replay after a reconnect; a viewer further behind gets a reset. Default 1000. */
  ringSize: option.integer({ min: 1, max: 1_000_000, default: 1000 }),
  /** Whether a session's holder still runs. Default: the holder check sessions use (pid and process start). */
  isHolderLive: option.func<(holder: SessionHolder) => boolean>({ default: isHolderLive }),
  /** The clock, in epoch milliseconds. Default: the system clock. */
  now: option.func({ default: systemClock.now }),
  /**
   * A monotonic clock in milliseconds, against which a step back of `now` is seen (a poll then reads
   * every record again). Default `performance.now`.
   */
  monotonicNow: option.func<() => number>({ default: monotonicNow }),
  /** Told about failed polls. Default: `consoleDashboardLogger`. */
  /** Where processes of work whose holder is gone are looked up. Default /proc. */
  processSource: option.shaped<ProcessSource>('a process source', ['read']),
  /** SIGTERM → SIGKILL grace when such work is stopped here, in ms (1 to 600000). Default 2000. */
  killGraceMs: option.integer({ min: 1, max: 600_000, default: 2000 }),
  logger: option.logger({ default: consoleDashboardLogger }),
  /**
   * Work that runs on workers (`errand serve --redis`): its output is read from its Redis stream, its
   * state from its job's record when no runtime holds it, and its Stop recorded on the job. Default:
   * none (such work shows what the store recorded).
   */
  remote: option.shaped<RemoteWorkAccess>('a RemoteWorkAccess ({ openOutput, knownState, cancel })', [
    'openOutput',
    'knownState',
    'cancel',
  ]),
});

/** Options of `createStoreDashboardBackend`. */
export type StoreDashboardBackendOptions = OptionsInput<typeof storeDashboardBackendOptions.rules>;

/** The fixed defaults of `StoreDashboardBackendOptions`. */
export const STORE_DASHBOARD_DEFAULTS = storeDashboardBackendOptions.defaults;

export interface StoreDashboardBackend extends DashboardBackend {
  stopBackgroundWork(workId: string): Promise<StopBackgroundWorkResult>;
  moveToBackground(workId: string): Promise<MoveToBackgroundResult>;
  listForegroundWork(sessionId: string): ForegroundWork[];
  readMessages(sessionId: string, page: MessagePageRequest): MessagePage;
  /** Reads the store now and emits what changed (what each `pollMs` tick does). */
  refresh(): void;
  /** Stops polling. Idempotent; the store stays the caller's. */
  dispose(): void;
}

/** No answer from the holding runtime within `stopTimeoutMs`: nothing is known to be stopped. */
export class StopNotAnsweredError extends ErrandError {
  constructor(workId: string, sessionId: string, pid: number, timeoutMs: number) {
    super(
      'STOP_NOT_ANSWERED',
      'system',
      `The runtime holding session ${JSON.stringify(sessionId)} (process ${pid}) did not answer the stop of ${JSON.stringify(workId)} within ${timeoutMs} ms (stopTimeoutMs); the work may still be running`,
      { context: { workId, sessionId, pid, timeoutMs } },
    );
  }
}

/** The holding runtime tried to stop the work and failed. */
export class StopFailedError extends ErrandError {
  constructor(workId: string, reason: string) {
    super(
      'STOP_FAILED',
      'system',
      `The runtime holding ${JSON.stringify(workId)} could not stop it (${reason}); the work may still be running`,
      { context: { workId, reason } },
    );
  }
}

/** The holding runtime tried to move the work to the background and failed. */
export class MoveFailedError extends ErrandError {
  constructor(workId: string, reason: string) {
    super(
      'MOVE_FAILED',
      'system',
      `The runtime holding ${JSON.stringify(workId)} could not move it to the background (${reason}); it may still run in the foreground`,
      { context: { workId, reason } },
    );
  }
}

/** Task kinds whose foreground calls a person can move to the background (the bash and agent tools). */
const MOVABLE_KINDS: ReadonlySet<string> = new Set(['bash', 'agent']);

const MOVE_REJECTION_REASONS: readonly MoveRejectionReason[] = ['not_found', 'not_running', 'not_supported'];

/**
 * Records are stamped under the store's write lock with the machine's wall clock, so stamps follow the
 * order of commits unless that clock steps back. A poll reads what was stamped at or after this margin
 * before the newest record it saw, and reads everything when the wall clock fell behind the monotonic one
 * by more than `CLOCK_STEP_MS` (plus what slewing allows, `CLOCK_SLEW` per elapsed ms) since the last poll.
 */
const REREAD_MS = 2;
const CLOCK_STEP_MS = 1;
const CLOCK_SLEW = 0.001;

const REJECTION_REASONS: readonly StopRejectionReason[] = [
  'not_found',
  'not_running',
  'cancel_not_supported',
];

function isLive(task: StoredTask): boolean {
  return task.status === 'running' || task.status === 'stopping';
}

function numberOrNull(value: unknown, allowNegative = false): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && (allowNegative || value >= 0)
    ? value
    : null;
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function fileSize(path: string | undefined): number | undefined {
  if (path === undefined) return undefined;
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

export { readFileTail };

export function createStoreDashboardBackend(options: StoreDashboardBackendOptions): StoreDashboardBackend {
  const resolved = storeDashboardBackendOptions.resolve(options);
  const { store, pollMs, stopTimeoutMs, stopPollMs, ringSize, logger, now } = resolved;
  const { outputPollMs, maxOutputReadBytes } = resolved;
  let readers = 0;
  const { killGraceMs, remote } = resolved;
  const source = resolved.processSource ?? memoizedSource(procfsSource());
  const feed = new StoreEventFeed({
    store,
    ringSize,
    holderLive: resolved.isHolderLive,
    now,
    monotonicNow: resolved.monotonicNow,
    source,
    remote,
  });
  let failing = false;
  const refresh = () => {
    try {
      feed.refresh();
      failing = false;
    } catch (error) {
      if (!failing) {
        logger.warn('reading background work from the store failed', {
          error: error instanceof Error ? error.message : String(error),
        });
      }
      failing = true;
    }
  };
  const timer = setInterval(refresh, pollMs);
  timer.unref?.();

  const holderLive = options.isHolderLive ?? isHolderLive;
  const summaries = createSessionSummaries({ store, isHolderLive: holderLive });

  let disposed = false;
  /** The command once answered; still pending at the deadline, or once the backend is disposed. */
  const waitForAnswer = async (commandId: number) => {
    const deadline = now() + stopTimeoutMs;
    for (;;) {
      const command = store.getCommand(commandId);
      if (command === undefined || command.state !== 'pending') return command;
      const left = deadline - now();
      if (left <= 0 || disposed) return command;
      await new Promise((resolve) => setTimeout(resolve, Math.min(stopPollMs, left)));
    }
  };

  /**
   * Submits a command to the live holder of `task`'s session and waits for its answer: acknowledged, or
   * the rejection reason. Throws `StopNotAnsweredError` when nobody answered in time.
   */
  const submitAndWait = async (
    type: RuntimeCommandType,
    task: StoredTask & { sessionId: NonNullable<StoredTask['sessionId']> },
    holder: SessionHolder,
  ): Promise<{ acknowledged: true } | { acknowledged: false; reason: string }> => {
    const submitted = store.submitCommand({
      sessionId: task.sessionId,
      runtime: holder.runtime,
      type,
      workId: task.id,
    });
    let answer = await waitForAnswer(submitted.id);
    if (answer?.state === 'pending') {
      // Nobody answered in time: the command is withdrawn, unless the answer came just now.
      const expired = store.answerCommand(submitted.id, { state: 'expired' });
      answer = expired.command;
      if (expired.answered)
        throw new StopNotAnsweredError(task.id, task.sessionId, holder.pid, stopTimeoutMs);
    }
    if (answer?.state === 'acknowledged') {
      refresh();
      return { acknowledged: true };
    }
    return { acknowledged: false, reason: answer?.reason ?? 'no answer' };
  };

  /** The live holder of a session, if its runtime still runs. */
  const liveHolderOf = (sessionId: string): SessionHolder | undefined => {
    const holder = store.getSession(sessionId)?.holder;
    return holder !== undefined && holderLive(holder) ? holder : undefined;
  };

  return {
    events: feed,
    refresh,
    listSessions: () => summaries.list(),
    getSession: (sessionId) => summaries.get(sessionId),
    async stopBackgroundWork(workId): Promise<StopBackgroundWorkResult> {
      const records = store.listTasks().filter((task) => task.id === workId && task.isBackgrounded);
      if (records.length === 0) return { ok: false, reason: 'not_found' };
      // Ids are unique across the runtimes of one store (reserved blocks); records from before that may
      // repeat an id: the newest running record with it is meant.
      const task = records.filter((record) => record.status === 'running').at(-1);
      if (task?.sessionId === undefined) return { ok: false, reason: 'not_running' };
      const holder = liveHolderOf(task.sessionId);
      const job = remoteJobOf(task.detail);
      if (holder === undefined && job !== undefined && remote !== undefined) {
        // Its runtime is gone: the cancel is recorded on its job, and its worker kills the tree.
        const result = await remote.cancel(job, 'stopped from the dashboard while no runtime held it');
        if (result !== 'requested' && result !== 'settled') return { ok: false, reason: 'not_running' };
        store.upsertTask({ ...taskRecordInput(task), status: 'stopping', stopInitiator: 'user' });
        refresh();
        return { ok: true };
      }
      if (holder === undefined) {
        const stopped = await stopUnheld(task, { store, source, killGraceMs, logger });
        refresh();
        return stopped ? { ok: true } : { ok: false, reason: 'not_running' };
      }
      const answer = await submitAndWait(
        'cancel_background_work',
        { ...task, sessionId: task.sessionId },
        holder,
      );
      if (answer.acknowledged) return { ok: true };
      if ((REJECTION_REASONS as readonly string[]).includes(answer.reason)) {
        return { ok: false, reason: answer.reason as StopRejectionReason };
      }
      throw new StopFailedError(workId, answer.reason);
    },
    outputSnapshot(
      sessionId,
      workId,
      maxBytes,
    ): OutputSnapshot | Promise<OutputSnapshot | undefined> | undefined {
      const record = store.getTask(workId, sessionId);
      const job = record === undefined ? undefined : remoteJobOf(record.detail);
      if (job !== undefined && remote !== undefined) return remoteTail(remote, job, maxBytes);
      const outputFile = record?.outputFile;
      if (outputFile === undefined) return undefined;
      return readFileTail(outputFile, maxBytes);
    },
    readMessages: (sessionId, page) =>
      pageFromStore((listOptions) => store.listMessages(sessionId, listOptions), page),
    listForegroundWork(sessionId): ForegroundWork[] {
      const holder = liveHolderOf(sessionId);
      // A foreground record whose holder is gone is not running, whatever it says.
      if (holder === undefined) return [];
      return store
        .listTasks({ sessionId, statuses: ['running'] })
        .filter((task) => !task.isBackgrounded)
        .map((task) => ({
          workId: task.id,
          sessionId,
          toolCallId: stringOrNull(task.detail.toolUseId),
          taskKind: task.kind,
          label: task.label,
          startedAt: task.startedAt,
          canMoveToBackground: MOVABLE_KINDS.has(task.kind),
        }));
    },
    async moveToBackground(workId): Promise<MoveToBackgroundResult> {
      const records = store.listTasks().filter((task) => task.id === workId);
      if (records.length === 0) return { ok: false, reason: 'not_found' };
      const task = records.filter((record) => record.status === 'running' && !record.isBackgrounded).at(-1);
      if (task?.sessionId === undefined) return { ok: false, reason: 'not_running' };
      const holder = liveHolderOf(task.sessionId);
      if (holder === undefined) return { ok: false, reason: 'not_running' };
      const answer = await submitAndWait(
        'move_to_background',
        { ...task, sessionId: task.sessionId },
        holder,
      );
      if (answer.acknowledged) return { ok: true, workId };
      if ((MOVE_REJECTION_REASONS as readonly string[]).includes(answer.reason)) {
        return { ok: false, reason: answer.reason as MoveRejectionReason };
      }
      throw new MoveFailedError(workId, answer.reason);
    },
    openOutput(workId, position): OutputCursor | Promise<OutputCursor | undefined> | undefined {
      const facts = feed.find(workId);
      const sessionId = facts?.sessionId ?? undefined;
      if (facts === undefined || sessionId === undefined) return undefined;
      const record = store.getTask(workId, sessionId);
      const job = record === undefined ? undefined : remoteJobOf(record.detail);
      const parts = {
        taskId: facts.taskId as TaskId,
        status: () => feed.find(workId)?.status ?? 'lost',
        pollMs: outputPollMs,
        maxReadBytes: maxOutputReadBytes,
        now,
      };
      if (job !== undefined && remote !== undefined) {
        return remote.openOutput(job).then((stream) => {
          if (stream === undefined) return undefined;
          readers += 1;
          return openStreamOutputCursor({ ...parts, id: `redis-cursor-${readers}` }, stream, position);
        });
      }
      const outputFile = record?.outputFile;
      if (outputFile === undefined) return undefined;
      readers += 1;
      return openFileOutputCursor(
        {
          id: `file-cursor-${readers}`,
          taskId: facts.taskId as TaskId,
          path: outputFile,
          // The feed's view: what the store recorded, and `lost` once the work's holder is gone.
          status: () => feed.find(workId)?.status ?? 'lost',
          pollMs: outputPollMs,
          maxReadBytes: maxOutputReadBytes,
          now,
        },
        position,
      );
    },
    dispose() {
      disposed = true;
      clearInterval(timer);
      feed.dispose();
    },
  };
}

/** The newest `maxBytes` of a remote job's output stream, starting on a character. */
async function remoteTail(
  remote: RemoteWorkAccess,
  job: string,
  maxBytes: number,
): Promise<OutputSnapshot | undefined> {
  const stream = await remote.openOutput(job);
  if (stream === undefined) return undefined;
  const start = Math.max(stream.retainedFrom, stream.end - maxBytes);
  const chunk = await stream.read(start, stream.end - start);
  let first = 0;
  // A tail cut inside a character starts at the next one.
  while (first < chunk.bytes.length && first < 3 && (chunk.bytes[first]! & 0xc0) === 0x80) first += 1;
  return { text: new TextDecoder().decode(chunk.bytes.subarray(first)), totalBytes: stream.end };
}

interface FeedParts {
  readonly store: SessionStore;
  readonly ringSize: number;
  readonly holderLive: (holder: SessionHolder) => boolean;
  readonly now: () => number;
  readonly monotonicNow: () => number;
  readonly source: ProcessSource;
  readonly remote: RemoteWorkAccess | undefined;
}

/**
 * Stops work whose session no runtime holds: it is still running (checked), so its record says a person
 * asked to stop it, and its tree is terminated. False when nothing of it runs.
 */
async function stopUnheld(
  task: StoredTask,
  parts: { store: SessionStore; source: ProcessSource; killGraceMs: number; logger: Logger },
): Promise<boolean> {
  if (waitsForResume(task, parts.store)) {
    // A schedule waiting for its session: marked stopped here, the resume ends it `killed`, never firing.
    parts.store.upsertTask({ ...taskRecordInput(task), status: 'stopping', stopInitiator: 'user' });
    return true;
  }
  const verdict = judgeLeftTask(task, parts.source);
  if (verdict.kind !== 'runs') return false;
  parts.store.upsertTask({ ...taskRecordInput(task), status: 'stopping', stopInitiator: 'user' });
  await stopRecognizedTree(identityOfRecord(task), verdict.recognition, {
    source: parts.source,
    clock: systemClock,
    killGraceMs: parts.killGraceMs,
    logger: parts.logger,
  });
  return true;
}

/**
 * A live schedule whose runtime is gone waits in the store (its definition in `schedules`) until its
 * session is resumed, which re-arms it: it is shown running, and a Stop marks it stopped for that resume.
 */
function waitsForResume(task: StoredTask, store: SessionStore): boolean {
  return (
    task.kind === 'schedule' &&
    task.sessionId !== undefined &&
    task.process === undefined &&
    store.getSchedule(task.sessionId, task.id) !== undefined
  );
}

/** The background event feed of a store: what `refresh` finds changed since the last read. */
class StoreEventFeed implements BackgroundEventFeed {
  readonly streamId = `store-${Math.random().toString(36).slice(2, 10)}`;
  readonly #parts: FeedParts;
  readonly #ring: EventRing<BackgroundEvent>;
  readonly #facts = new Map<string, BackgroundTaskFacts>();
  readonly #listeners = new Set<BackgroundEventListener>();
  /** The task records known so far, by scope and id, and the newest write time among them. */
  readonly #known = new Map<string, StoredTask>();
  /** The keys of `#known` per task id (ids may repeat across sessions' records from before id blocks). */
  readonly #keysById = new Map<string, Set<string>>();
  /**
   * Task ids whose facts may change without their record being written: live ones (their holder may die,
   * their output grows) and ended ones not yet told (whether their end is pending depends on the
   * session). A told ending's facts depend on its record alone, so a poll skips it until it is written.
   */
  readonly #unsettled = new Set<string>();
  #watermark = 0;
  /** The store's count of deleted task records at the last read (-1: nothing read yet). */
  #deletions = -1;
  /** The wall clock and the monotonic one at the last read. */
  #clocks: { wall: number; monotonic: number } | undefined;
  #nextId = 1;
  #disposed = false;

  constructor(parts: FeedParts) {
    this.#parts = parts;
    this.#ring = new EventRing(parts.ringSize);
    // What exists before the feed is part of the level, not of the event history.
    this.#records();
    for (const facts of this.#read()) this.#facts.set(facts.taskId, facts);
  }

  holderLive(holder: SessionHolder): boolean {
    return this.#parts.holderLive(holder);
  }

  get latestId(): number {
    return this.#nextId - 1;
  }

  since(lastId: number): ReplayResult<BackgroundEvent> {
    return this.#ring.since(lastId);
  }

  level(sessionId?: string | null): BackgroundWorksLevel {
    const tasks = [...this.#facts.values()].filter(
      (facts) => sessionId === undefined || facts.sessionId === sessionId,
    );
    return worksLevel(tasks, sessionId, this.latestId, this.#parts.now());
  }

  find(taskId: string): BackgroundTaskFacts | undefined {
    return this.#facts.get(taskId);
  }

  subscribe(listener: BackgroundEventListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  dispose(): void {
    this.#disposed = true;
    this.#listeners.clear();
  }

  refresh(): void {
    if (this.#disposed) return;
    const seen = new Set<string>();
    const gone = new Set<string | null>();
    const { changed, full } = this.#records();
    // A full read looks at every record (and drops the pruned); between, what changed and what is unsettled.
    const ids = full ? undefined : new Set([...changed, ...this.#unsettled]);
    for (const facts of this.#read(ids)) {
      seen.add(facts.taskId);
      const previous = this.#facts.get(facts.taskId);
      if (previous !== undefined && sameFacts(previous, facts)) continue;
      this.#facts.set(facts.taskId, facts);
      const ended = isTerminalStatus(facts.status);
      let type: BackgroundTaskEventType;
      if (
        previous === undefined ||
        previous.startedAt !== facts.startedAt ||
        previous.sessionId !== facts.sessionId
      ) {
        type = ended ? 'BackgroundTaskCompleted' : 'BackgroundTaskStarted';
      } else {
        type =
          ended && !isTerminalStatus(previous.status) ? 'BackgroundTaskCompleted' : 'BackgroundTaskUpdated';
      }
      this.#emit((id, at) => ({ ...facts, type, id, at }) as BackgroundEvent);
    }
    for (const [taskId, facts] of full ? this.#facts : []) {
      if (seen.has(taskId)) continue;
      // Pruned from the store: its session's level replaces what viewers hold.
      this.#facts.delete(taskId);
      gone.add(facts.sessionId);
    }
    for (const sessionId of gone) {
      this.#emit((id, at) => ({
        ...this.level(sessionId),
        id,
        at,
      }));
    }
  }

  #emit(build: (id: number, at: number) => BackgroundEvent): void {
    const event = Object.freeze(build(this.#nextId, this.#parts.now()));
    this.#nextId += 1;
    this.#ring.push(event);
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch {
        // A viewer's failure is its own; the others still get the event.
      }
    }
  }

  /**
   * The task records, read incrementally: only what was written since the last read (`updatedSince`, less
   * `REREAD_MS`); the whole table only on the first read, after the store deleted records (pruned, or with
   * their session), which also drops them here, and after the wall clock stepped back. A poll's cost
   * follows what changed, not the history.
   */
  #records(): { readonly changed: ReadonlySet<string>; readonly full: boolean } {
    const store = this.#parts.store;
    const deletions = store.taskRecordDeletions();
    const full = deletions !== this.#deletions || this.#clockSteppedBack();
    this.#deletions = deletions;
    const records = full
      ? store.listTasks()
      : store.listTasks({ updatedSince: Math.max(0, this.#watermark - REREAD_MS) });
    if (full) {
      this.#known.clear();
      this.#keysById.clear();
    }
    const changed = new Set<string>();
    for (const task of records) {
      const key = `${task.sessionId ?? ''}/${task.id}`;
      this.#known.set(key, task);
      let keys = this.#keysById.get(task.id);
      if (keys === undefined) {
        keys = new Set();
        this.#keysById.set(task.id, keys);
      }
      keys.add(key);
      changed.add(task.id);
      if (task.updatedAt > this.#watermark) this.#watermark = task.updatedAt;
    }
    return { changed, full };
  }

  /** Whether the wall clock stepped back since the last read (then stamps may no longer follow commits). */
  #clockSteppedBack(): boolean {
    const clocks = { wall: this.#parts.now(), monotonic: this.#parts.monotonicNow() };
    const last = this.#clocks;
    this.#clocks = clocks;
    if (last === undefined) return false;
    const elapsed = clocks.monotonic - last.monotonic;
    return clocks.wall - last.wall < elapsed - CLOCK_STEP_MS - elapsed * CLOCK_SLEW;
  }

  /**
   * The background task records of `ids` (every known one when undefined) as a viewer sees them, one per
   * task id (the newest, a live one first).
   */
  #read(ids?: ReadonlySet<string>): BackgroundTaskFacts[] {
    const byId = new Map<string, StoredTask>();
    const candidates: StoredTask[] = [];
    if (ids === undefined) candidates.push(...this.#known.values());
    else {
      for (const id of ids) {
        for (const key of this.#keysById.get(id) ?? []) {
          const task = this.#known.get(key);
          if (task !== undefined) candidates.push(task);
        }
      }
    }
    if (ids === undefined) this.#unsettled.clear();
    else for (const id of ids) this.#unsettled.delete(id);
    for (const task of candidates.sort((a, b) => a.startedAt - b.startedAt)) {
      if (!task.isBackgrounded || task.sessionId === undefined) continue;
      const current = byId.get(task.id);
      // Listed oldest start first: a later record replaces an earlier one unless that one is live.
      if (current === undefined || !isLive(current) || isLive(task)) byId.set(task.id, task);
    }
    const sessions = new StoreSessionReads(this.#parts.store, this.#parts.holderLive);
    for (const task of byId.values()) {
      if (isLive(task) || !task.reported) this.#unsettled.add(task.id);
    }
    return [...byId.values()].map((task) => this.#factsOf(task, sessions));
  }

  #factsOf(task: StoredTask, sessions: StoreSessionReads): BackgroundTaskFacts {
    const live = isLive(task);
    const sessionId = task.sessionId!;
    const holder = sessions.liveHolder(sessionId);
    // Nobody holds it: what it really is now, checked (it may run on, or have ended with a status).
    const job = this.#parts.remote === undefined ? undefined : remoteJobOf(task.detail);
    const verdict =
      live && holder === undefined && job === undefined && !waitsForResume(task, this.#parts.store)
        ? judgeLeftTask(task, this.#parts.source)
        : undefined;
    const shown =
      live && holder === undefined && job !== undefined
        ? remoteVerdict(task, this.#parts.remote!, job)
        : verdict === undefined
          ? undefined
          : shownVerdict(task, verdict);
    const status = shown?.status ?? task.status;
    const detail = task.detail;
    const outputBytes = isLive({ ...task, status }) ? fileSize(task.outputFile) : undefined;
    // The same rule as the in-process feed; a notifier's claim between its end and its queueing lasts
    // less than a poll, so it is not seen here.
    const sessionGeneration = holder === undefined ? undefined : sessions.generation(sessionId);
    const resultPending = isResultPending(
      {
        status,
        reported: task.reported,
        stopInitiator: task.stopInitiator,
        branchGeneration: task.branchGeneration,
        superseded: isSupersededDetail(detail as Readonly<Record<string, unknown>>),
      },
      {
        sessionGeneration,
        queued:
          sessionGeneration !== undefined &&
          isTerminalStatus(status) &&
          sessions.queuedTaskIds(sessionId).has(task.id),
        notifying: false,
      },
    );
    return Object.freeze({
      sessionId,
      taskId: task.id,
      taskKind: task.kind,
      kind: displayKindOf(task.kind),
      label: task.label,
      toolUseId: stringOrNull(detail.toolUseId),
      status,
      cancellable: status === 'running',
      resultPending,
      attempt: 1,
      startedAt: task.startedAt,
      endedAt: task.endedAt ?? null,
      cancelRequestedAt: null,
      pid: numberOrNull(detail.pid),
      outputBytes: outputBytes ?? numberOrNull(detail.outputBytes),
      tail: null,
      exitCode: shown?.exitCode ?? numberOrNull(detail.exitCode, true),
      signal: stringOrNull(detail.signal),
      reason: shown?.reason ?? stringOrNull(detail.reason),
      error: shown !== undefined ? shown.error : (task.error ?? null),
      sandbox: sandboxSummaryOf(detail) ?? null,
      limits: limitsSummaryOf(detail) ?? null,
      schedule: taskFact({ detail }, 'schedule') ?? null,
    });
  }
}

/**
 * How a remote job whose runtime is gone is shown: as recorded while its record says it is queued or
 * running (or before its record was read), else as its record says it ended.
 */
function remoteVerdict(task: StoredTask, remote: RemoteWorkAccess, job: string): ShownVerdict | undefined {
  const known = remote.knownState(job);
  if (known === undefined || known.state === 'queued' || known.state === 'running') return undefined;
  switch (known.state) {
    case 'ended':
      if (known.reason !== 'completed' && known.reason !== undefined && known.reason !== null) {
        return { status: 'killed', reason: known.reason, error: known.error ?? null };
      }
      return {
        status: known.exitCode === 0 ? 'completed' : 'failed',
        ...(typeof known.exitCode === 'number' ? { exitCode: known.exitCode } : {}),
        reason: 'completed',
        error: null,
      };
    case 'killed':
      return { status: 'killed', reason: 'cancelled', error: known.error ?? null };
    case 'lost':
      return { status: 'lost', reason: 'lost', error: known.error ?? null };
    default:
      return {
        status: task.durable ? task.status : 'lost',
        reason: null,
        error: `Redis no longer holds the record of its job (${job})`,
      };
  }
}

interface ShownVerdict {
  readonly status: StoredTask['status'];
  readonly exitCode?: number;
  readonly reason: string | null;
  readonly error: string | null;
}

/** How a checked verdict is shown: a record that runs on stays as recorded. */
function shownVerdict(task: StoredTask, verdict: Verdict): ShownVerdict {
  switch (verdict.kind) {
    case 'runs':
      return { status: task.status, reason: stringOrNull(task.detail.reason), error: null };
    case 'exited':
      return {
        status: verdict.exitCode === 0 ? 'completed' : 'failed',
        exitCode: verdict.exitCode,
        reason: 'completed',
        error: null,
      };
    case 'ended':
      return {
        status: verdict.outcome.status,
        reason: stringOrNull(verdict.outcome.detail?.reason),
        error: verdict.outcome.error ?? null,
      };
    case 'lost':
      return { status: 'lost', reason: verdict.lostCase, error: LOST_CASE_ERRORS[verdict.lostCase] };
  }
}
