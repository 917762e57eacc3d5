/**
 * A DashboardBackend over the shared data directory, for `errand serve`: it shows the work of every
 * runtime that records into the store — `errand mcp`, `errand chat`, a harness — from another process,
 * with no listener in those runtimes. Sessions and task records come from the store; events come from
 * polling it every `pollMs` (there is no cross-process event), emitted only when a viewer would see a
 * change; byte counts and output come from each task's output file; a task recorded running whose
 * session holder is gone is shown `lost`, never running. Stop submits a command to the session's live
 * holder, which polls for it (`commandPollMs` of `createErrandRuntime`), and waits up to `stopTimeoutMs`
 * for its answer: acknowledged, rejected with a reason, or — no answer in time — an error (the command is
 * expired), never a fake success. "Move to background" of a running foreground command (recorded in the
 * store too) is a command of its own the same way. The conversation is the store's message log.
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
  type ReplayResult,
  sameFacts,
  worksLevel,
} from '../events/index.js';
import { sandboxSummaryOf } from '../process/index.js';
import { isHolderLive } from '../session/session-holder.js';
import type { RuntimeCommandType, SessionHolder, SessionStore, StoredTask } from '../store/index.js';
import {
  ErrandError,
  InvalidArgumentError,
  isTerminalStatus,
  type Logger,
  systemClock,
} from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../tasks/option-keys.js';
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
import { consoleDashboardLogger, integerInRange } from './server-options.js';
import { createSessionSummaries } from './session-summaries.js';

/** Options of `createStoreDashboardBackend`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface StoreDashboardBackendOptions {
  /** The store the working runtimes record into (for `errand serve`: the SQLite store of the data directory). */
  readonly store: SessionStore;
  /** How often the store is read for task changes, in ms (1 to 3600000). Default 1000. */
  readonly pollMs?: number;
  /** How long a Stop waits for the holding runtime's answer, in ms (1 to 600000). Default 5000. */
  readonly stopTimeoutMs?: number;
  /** How often a waiting Stop re-reads its command, in ms (1 to 60000). Default 50. */
  readonly stopPollMs?: number;
  /** Events kept for replay after a reconnect; a viewer further behind gets a reset. Default 1000. */
  readonly ringSize?: number;
  /** Whether a session's holder still runs. Default: the holder check sessions use (pid and process start). */
  readonly isHolderLive?: (holder: SessionHolder) => boolean;
  /** The clock, in epoch milliseconds. Default: the system clock. */
  readonly now?: () => number;
  /** Told about failed polls. Default: `consoleDashboardLogger`. */
  readonly logger?: Logger;
}

const STORE_DASHBOARD_BACKEND_OPTION_KEYS = optionKeys<StoreDashboardBackendOptions>()({
  store: true,
  pollMs: true,
  stopTimeoutMs: true,
  stopPollMs: true,
  ringSize: true,
  isHolderLive: true,
  now: true,
  logger: true,
});

export const STORE_DASHBOARD_DEFAULTS = Object.freeze({
  pollMs: 1000,
  stopTimeoutMs: 5000,
  stopPollMs: 50,
  ringSize: 1000,
});

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

/** Every this many polls the whole task table is read again (dropping pruned records); between, only changes. */
const FULL_READ_EVERY = 60;

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
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownOptions(options, STORE_DASHBOARD_BACKEND_OPTION_KEYS, {
    where: 'createStoreDashboardBackend',
  });
  const { store } = options;
  if (typeof store?.listTasks !== 'function' || typeof store.submitCommand !== 'function') {
    throw new InvalidArgumentError('store', 'a SessionStore', store);
  }
  const defaults = STORE_DASHBOARD_DEFAULTS;
  const pollMs = integerInRange('pollMs', options.pollMs, defaults.pollMs, 1, 3_600_000);
  const stopTimeoutMs = integerInRange(
    'stopTimeoutMs',
    options.stopTimeoutMs,
    defaults.stopTimeoutMs,
    1,
    600_000,
  );
  const stopPollMs = integerInRange('stopPollMs', options.stopPollMs, defaults.stopPollMs, 1, 60_000);
  const ringSize = integerInRange('ringSize', options.ringSize, defaults.ringSize, 1, 1_000_000);
  for (const field of ['isHolderLive', 'now'] as const) {
    if (options[field] !== undefined && typeof options[field] !== 'function') {
      throw new InvalidArgumentError(field, 'a function', options[field]);
    }
  }
  const logger = options.logger ?? consoleDashboardLogger;
  if (typeof logger?.warn !== 'function')
    throw new InvalidArgumentError('logger', 'an object with warn()', logger);
  const now = options.now ?? systemClock.now;
  const feed = new StoreEventFeed({
    store,
    ringSize,
    holderLive: options.isHolderLive ?? isHolderLive,
    now,
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
      if (holder === undefined) return { ok: false, reason: 'not_running' };
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
    outputSnapshot(sessionId, workId, maxBytes): OutputSnapshot | undefined {
      const outputFile = store.getTask(workId, sessionId)?.outputFile;
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
    dispose() {
      disposed = true;
      clearInterval(timer);
      feed.dispose();
    },
  };
}

interface FeedParts {
  readonly store: SessionStore;
  readonly ringSize: number;
  readonly holderLive: (holder: SessionHolder) => boolean;
  readonly now: () => number;
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
  #watermark = 0;
  #polls = 0;
  #nextId = 1;
  #disposed = false;

  constructor(parts: FeedParts) {
    this.#parts = parts;
    this.#ring = new EventRing(parts.ringSize);
    // What exists before the feed is part of the level, not of the event history.
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
    for (const facts of this.#read()) {
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
    for (const [taskId, facts] of this.#facts) {
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
   * The task records, read incrementally: only what was written since the last read (`updatedSince`),
   * and the whole table every `FULL_READ_EVERY` polls, which also drops records pruned meanwhile.
   */
  #records(): Iterable<StoredTask> {
    const store = this.#parts.store;
    const full = this.#polls % FULL_READ_EVERY === 0;
    this.#polls += 1;
    const changed = full ? store.listTasks() : store.listTasks({ updatedSince: this.#watermark });
    if (full) this.#known.clear();
    for (const task of changed) {
      this.#known.set(`${task.sessionId ?? ''}/${task.id}`, task);
      if (task.updatedAt > this.#watermark) this.#watermark = task.updatedAt;
    }
    return this.#known.values();
  }

  /** Every background task record as a viewer sees it, one per task id (the newest, a live one first). */
  #read(): BackgroundTaskFacts[] {
    const byId = new Map<string, StoredTask>();
    for (const task of [...this.#records()].sort((a, b) => a.startedAt - b.startedAt)) {
      if (!task.isBackgrounded || task.sessionId === undefined) continue;
      const current = byId.get(task.id);
      // Listed oldest start first: a later record replaces an earlier one unless that one is live.
      if (current === undefined || !isLive(current) || isLive(task)) byId.set(task.id, task);
    }
    const holders = new Map<string, SessionHolder | undefined>();
    const liveHolder = (sessionId: string): SessionHolder | undefined => {
      if (!holders.has(sessionId)) {
        const holder = this.#parts.store.getSession(sessionId)?.holder;
        holders.set(sessionId, holder !== undefined && this.#parts.holderLive(holder) ? holder : undefined);
      }
      return holders.get(sessionId);
    };
    return [...byId.values()].map((task) =>
      this.#factsOf(task, isLive(task) ? liveHolder(task.sessionId!) : undefined),
    );
  }

  #factsOf(task: StoredTask, holder: SessionHolder | undefined): BackgroundTaskFacts {
    const live = isLive(task);
    const lost = live && holder === undefined;
    const status = lost ? 'lost' : task.status;
    const detail = task.detail;
    const outputBytes = live && !lost ? fileSize(task.outputFile) : undefined;
    return Object.freeze({
      sessionId: task.sessionId ?? null,
      taskId: task.id,
      taskKind: task.kind,
      kind: displayKindOf(task.kind),
      label: task.label,
      toolUseId: stringOrNull(detail.toolUseId),
      status,
      cancellable: status === 'running',
      resultDelivered: task.reported,
      attempt: 1,
      startedAt: task.startedAt,
      endedAt: task.endedAt ?? null,
      cancelRequestedAt: null,
      pid: numberOrNull(detail.pid),
      outputBytes: outputBytes ?? numberOrNull(detail.outputBytes),
      tail: null,
      exitCode: numberOrNull(detail.exitCode, true),
      signal: stringOrNull(detail.signal),
      reason: stringOrNull(detail.reason),
      error: lost
        ? 'The runtime that ran this task is gone; its process did not survive.'
        : (task.error ?? null),
      sandbox: sandboxSummaryOf(detail) ?? null,
    });
  }
}
