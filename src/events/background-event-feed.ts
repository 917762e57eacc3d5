/**
 * Derives the BackgroundTask* events from the task service's change feed: only background work, an
 * `Updated` only when a viewer would see a difference, monotonic ids, a replay ring for reconnecting
 * viewers, and the level signal. Whether an ended work's result is pending comes from the sessions'
 * ledgers (`ledger`), told of their changes. Event-driven; it polls only through an optional sampler, for
 * facts that have no event, and re-reads the ledger while a result is pending.
 */
import { type Disposer, isTerminalStatus, type TaskChange, type TaskSnapshot } from '../tasks/index.js';
import {
  type BackgroundEvent,
  type BackgroundTaskEvent,
  type BackgroundTaskEventType,
  type BackgroundWorksLevel,
  worksLevel,
} from './background-events.js';
import {
  type BackgroundTaskFacts,
  deriveTaskFacts,
  sameFacts,
  type ViewerFacts,
} from './background-task-facts.js';
import { EventRing, type ReplayResult } from './event-ring.js';
import {
  type BackgroundEventFeedOptions,
  backgroundEventFeedOptions,
  type ResolvedFeedOptions,
} from './feed-options.js';
import type { LedgerReads } from './ledger-reads.js';
import { PendingResults } from './pending-results.js';

export type BackgroundEventListener = (event: BackgroundEvent) => void;

/** A source of background-work events; what a dashboard, a terminal panel or a log consumes. */
export interface BackgroundEventFeed {
  /** Names this feed's id sequence; event ids are only comparable within one stream. */
  readonly streamId: string;
  /** The id of the newest event (0 before the first). */
  readonly latestId: number;
  /** The events after `lastId`, or a reset when the ring no longer holds them all. */
  since(lastId: number): ReplayResult<BackgroundEvent>;
  /**
   * The level signal built now from the task service: every background work (of one session when
   * `sessionId` is given; null for ownerless work). Its id is `latestId`: it describes the state after it.
   */
  level(sessionId?: string | null): BackgroundWorksLevel;
  /** The current facts of a background task the feed knows, or undefined. */
  find(taskId: string): BackgroundTaskFacts | undefined;
  /** Receives every event as it is emitted; listeners are isolated from each other. */
  subscribe(listener: BackgroundEventListener): Disposer;
  /** Stops listening to the task service and stops sampling. Idempotent. */
  dispose(): void;
}

interface TrackedTask {
  facts: BackgroundTaskFacts;
  sampled: ViewerFacts | undefined;
}

export function createBackgroundEventFeed(options: BackgroundEventFeedOptions): BackgroundEventFeed {
  return new LocalBackgroundEventFeed(backgroundEventFeedOptions.resolve(options));
}

class LocalBackgroundEventFeed implements BackgroundEventFeed {
  readonly #options: ResolvedFeedOptions;
  readonly #ring: EventRing<BackgroundEvent>;
  readonly #tracked = new Map<string, TrackedTask>();
  readonly #listeners = new Set<BackgroundEventListener>();
  readonly #unsubscribe: Disposer;
  /** When to derive an ended work's facts again: its result's ledger changed, or a check is due. */
  readonly #results: PendingResults;
  #nextId = 1;
  #timer: ReturnType<typeof setInterval> | undefined;
  #sampling = false;
  #sampleCursor = 0;
  #disposed = false;

  constructor(options: ResolvedFeedOptions) {
    this.#options = options;
    this.#ring = new EventRing(options.ringSize);
    this.#results = new PendingResults({
      ledger: options.ledger,
      checkMs: options.ledgerCheckMs,
      logger: options.logger,
      now: options.now,
      sessionOf: (taskId) => this.#tracked.get(taskId)?.facts.sessionId,
      refresh: (taskId, reads) => this.#refresh(taskId, reads),
    });
    // Work that exists before the feed is part of the level, not of the event history.
    const reads = this.#results.reads();
    for (const task of options.tasks.list(options.caller)) {
      if (!task.isBackgrounded) continue;
      this.#results.observe(task);
      this.#track(task.id, { facts: this.#derive(task, undefined, reads), sampled: undefined });
    }
    this.#unsubscribe = options.tasks.onTasksChanged((change) => this.#onChange(change), {
      caller: options.caller,
    });
    this.#updateSampling();
  }

  get streamId(): string {
    return this.#options.streamId;
  }

  get latestId(): number {
    return this.#nextId - 1;
  }

  since(lastId: number): ReplayResult<BackgroundEvent> {
    return this.#ring.since(lastId);
  }

  level(sessionId?: string | null): BackgroundWorksLevel {
    const tasks = this.#levelFacts(this.#options.tasks.list(this.#options.caller), sessionId);
    return worksLevel(tasks, sessionId, this.latestId, this.#options.now());
  }

  find(taskId: string): BackgroundTaskFacts | undefined {
    return this.#tracked.get(taskId)?.facts;
  }

  subscribe(listener: BackgroundEventListener): Disposer {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#unsubscribe();
    this.#results.dispose();
    this.#listeners.clear();
    this.#stopTimer();
  }

  // ---------------------------------------------------------------- derivation

  #derive(task: TaskSnapshot, sampled: ViewerFacts | undefined, reads: LedgerReads): BackgroundTaskFacts {
    return deriveTaskFacts(task, {
      readFacts: this.#options.readFacts,
      tailMaxBytes: this.#options.tailMaxBytes,
      sampled,
      resultPending: this.#results.resultPending(task, reads),
    });
  }

  #levelFacts(tasks: readonly TaskSnapshot[], sessionId: string | null | undefined): BackgroundTaskFacts[] {
    const facts: BackgroundTaskFacts[] = [];
    const reads = this.#results.reads();
    for (const task of tasks) {
      if (!task.isBackgrounded) continue;
      if (sessionId !== undefined && (task.ownerSessionId ?? null) !== sessionId) continue;
      const tracked = this.#tracked.get(task.id);
      const sampled = tracked?.facts.attempt === task.attempt ? tracked.sampled : undefined;
      facts.push(this.#derive(task, sampled, reads));
    }
    return facts;
  }

  #onChange(change: TaskChange): void {
    if (this.#disposed) return;
    const task = change.task;
    const tracked = this.#tracked.get(task.id);
    if (change.reason === 'removed') {
      if (tracked && tracked.facts.attempt === task.attempt) this.#forget(task, tracked);
      return;
    }
    if (!task.isBackgrounded) {
      // A resumed id may come back as foreground work: it leaves the background view.
      if (tracked) this.#forget(task, tracked);
      return;
    }
    this.#results.observe(task);
    const sameAttempt = tracked !== undefined && tracked.facts.attempt === task.attempt;
    const facts = this.#derive(task, sameAttempt ? tracked.sampled : undefined, this.#results.reads());
    if (!sameAttempt) {
      this.#track(task.id, { facts, sampled: undefined });
      this.#emitTask(
        isTerminalStatus(task.status) ? 'BackgroundTaskCompleted' : 'BackgroundTaskStarted',
        facts,
      );
    } else {
      this.#publish(tracked, facts);
    }
    this.#updateSampling();
  }

  /** Records new facts and emits what a viewer needs to know, if anything. */
  #publish(tracked: TrackedTask, facts: BackgroundTaskFacts): void {
    const previous = tracked.facts;
    if (sameFacts(previous, facts)) return;
    tracked.facts = facts;
    this.#results.note(facts);
    const completed = isTerminalStatus(facts.status) && !isTerminalStatus(previous.status);
    this.#emitTask(completed ? 'BackgroundTaskCompleted' : 'BackgroundTaskUpdated', facts);
  }

  #track(taskId: string, tracked: TrackedTask): void {
    this.#tracked.set(taskId, tracked);
    this.#results.note(tracked.facts);
  }

  /** Derives a tracked task's facts again (its ledger changed) and publishes what changed. */
  #refresh(taskId: string, reads: LedgerReads): void {
    const tracked = this.#tracked.get(taskId);
    const task = tracked === undefined ? undefined : this.#safeGet(taskId);
    if (tracked === undefined || task === undefined) return;
    if (task.attempt !== tracked.facts.attempt || !task.isBackgrounded) return;
    this.#publish(tracked, this.#derive(task, tracked.sampled, reads));
  }

  #forget(task: TaskSnapshot, tracked: TrackedTask): void {
    this.#tracked.delete(task.id);
    this.#results.forget(task.id);
    // One event for the task, not the session's level: a long session's evictions stay a line each.
    this.#emit((id, at) => ({
      type: 'BackgroundTaskRemoved',
      id,
      at,
      taskId: task.id,
      sessionId: task.ownerSessionId ?? null,
      attempt: tracked.facts.attempt,
    }));
    this.#updateSampling();
  }

  #emitTask(type: BackgroundTaskEventType, facts: BackgroundTaskFacts): void {
    this.#emit((id, at) => ({ ...facts, type, id, at }) as BackgroundTaskEvent);
  }

  #emit(build: (id: number, at: number) => BackgroundEvent): void {
    const event = Object.freeze(build(this.#nextId, this.#options.now()));
    this.#nextId += 1;
    this.#ring.push(event);
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.#options.logger.warn('a background event listener failed', {
          eventId: event.id,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  }

  // ---------------------------------------------------------------- sampling (facts with no event)

  #liveTaskIds(): string[] {
    const ids: string[] = [];
    for (const [taskId, tracked] of this.#tracked) {
      if (!isTerminalStatus(tracked.facts.status)) ids.push(taskId);
    }
    return ids;
  }

  #updateSampling(): void {
    if (this.#options.sampler === undefined || this.#disposed) return;
    const needed = this.#liveTaskIds().length > 0;
    if (needed && this.#timer === undefined) {
      this.#timer = setInterval(() => void this.#sampleRound(), this.#options.sampleIntervalMs);
      this.#timer.unref?.();
    } else if (!needed) {
      this.#stopTimer();
    }
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #sampleRound(): Promise<void> {
    const sampler = this.#options.sampler;
    if (sampler === undefined || this.#sampling || this.#disposed) return;
    this.#sampling = true;
    try {
      const ids = this.#liveTaskIds();
      const count = Math.min(ids.length, this.#options.maxSampledTasks);
      const start = ids.length === 0 ? 0 : this.#sampleCursor % ids.length;
      this.#sampleCursor = start + count;
      for (let offset = 0; offset < count; offset += 1) {
        await this.#sampleTask(sampler, ids[(start + offset) % ids.length] as string);
      }
    } finally {
      this.#sampling = false;
    }
  }

  async #sampleTask(sampler: NonNullable<ResolvedFeedOptions['sampler']>, taskId: string): Promise<void> {
    let task: TaskSnapshot;
    let sampled: ViewerFacts | undefined;
    try {
      task = this.#options.tasks.get(taskId, this.#options.caller);
      sampled = await sampler(task);
    } catch (error) {
      this.#options.logger.warn(`task ${taskId}: sampling its viewer facts failed`, {
        taskId,
        error: error instanceof Error ? error.message : String(error),
      });
      return;
    }
    const tracked = this.#tracked.get(taskId);
    if (this.#disposed || sampled === undefined || tracked === undefined) return;
    // The task may have changed while the sampler ran; derive from its newest snapshot.
    const current = this.#safeGet(taskId) ?? task;
    if (current.attempt !== tracked.facts.attempt || isTerminalStatus(current.status)) return;
    tracked.sampled = { ...tracked.sampled, ...withoutUndefined(sampled) };
    this.#publish(tracked, this.#derive(current, tracked.sampled, this.#results.reads()));
  }

  #safeGet(taskId: string): TaskSnapshot | undefined {
    try {
      return this.#options.tasks.get(taskId, this.#options.caller);
    } catch {
      return undefined;
    }
  }
}

function withoutUndefined(facts: ViewerFacts): ViewerFacts {
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(facts)) if (value !== undefined) result[key] = value;
  return result as ViewerFacts;
}
