/**
 * The in-memory backend of the session store: the table port (`store-tables.ts`) as maps in this process.
 * A transaction keeps an undo log, so a write that throws half-way leaves the maps as they were, like a
 * rolled-back SQLite transaction. Maps, not SQLite on `:memory:`: decoding SQLite rows made every model
 * request's conversation read slower, measurably in `bench:notify` (figures in `src/store/README.md`).
 */
import type {
  CommandRow,
  LedgerRow,
  MessageRow,
  RunRow,
  ScheduleRow,
  SessionRow,
  StepRow,
  TaskRow,
} from './rows.js';
import type { StoreBackend, StoreTables } from './store-tables.js';

/** The undo log of the running transaction: every change records how to take itself back. */
class UndoLog {
  #entries: (() => void)[] | undefined;

  record(undo: () => void): void {
    this.#entries?.push(undo);
  }

  transaction<T>(body: () => T): T {
    const outer = this.#entries;
    const entries = outer ?? [];
    const mark = entries.length;
    this.#entries = entries;
    try {
      return body();
    } catch (error) {
      // Only this (possibly nested) transaction's changes, newest first.
      for (const undo of entries.splice(mark).reverse()) undo();
      throw error;
    } finally {
      if (outer === undefined) this.#entries = undefined;
    }
  }
}

/**
 * Rows by key, changed through the undo log. Iteration is in insertion order; `order`, when given, is the
 * order a restored row must take its place in again.
 */
class Rows<Key, Row> {
  readonly #rows = new Map<Key, Row>();

  constructor(
    private readonly log: UndoLog,
    private readonly order?: (a: Row, b: Row) => number,
  ) {}

  get(key: Key): Row | undefined {
    return this.#rows.get(key);
  }

  values(): Row[] {
    return [...this.#rows.values()];
  }

  /** The rows `test` accepts, in iteration order, at most `limit`. */
  select(test: (row: Row) => boolean, limit = Number.POSITIVE_INFINITY): Row[] {
    const selected: Row[] = [];
    if (limit < 1) return selected;
    for (const row of this.#rows.values()) {
      if (!test(row)) continue;
      selected.push(row);
      if (selected.length >= limit) break;
    }
    return selected;
  }

  set(key: Key, row: Row): void {
    const previous = this.#rows.get(key);
    this.#rows.set(key, row);
    this.log.record(() => (previous === undefined ? this.#rows.delete(key) : this.#rows.set(key, previous)));
  }

  /** Removes the row; true if there was one. */
  delete(key: Key): boolean {
    const previous = this.#rows.get(key);
    if (previous === undefined) return false;
    this.#rows.delete(key);
    this.log.record(() => this.#restore(key, previous));
    return true;
  }

  #restore(key: Key, row: Row): void {
    this.#rows.set(key, row);
    if (!this.order) return;
    const sorted = [...this.#rows].sort(([, a], [, b]) => this.order!(a, b));
    this.#rows.clear();
    for (const [sortedKey, sortedRow] of sorted) this.#rows.set(sortedKey, sortedRow);
  }
}

/**
 * A session's messages as an array in seq order, changed through the undo log: appending is the common
 * change, and a conversation read walks an array faster than a map.
 */
class MessageRows {
  readonly #rows: MessageRow[] = [];

  constructor(private readonly log: UndoLog) {}

  /** The index of `seq`, or where it would go. */
  #indexOf(seq: number): number {
    let low = 0;
    let high = this.#rows.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#rows[middle]!.seq < seq) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  select(
    afterSeq: number,
    includeAbandoned: boolean,
    limit = Number.POSITIVE_INFINITY,
    beforeSeq?: number,
  ): MessageRow[] {
    if (beforeSeq !== undefined) {
      // The newest rows before `beforeSeq`, walking back from it.
      const newest: MessageRow[] = [];
      for (let index = this.#indexOf(beforeSeq) - 1; index >= 0 && newest.length < limit; index--) {
        const row = this.#rows[index]!;
        if (row.seq <= afterSeq) break;
        if (includeAbandoned || row.abandonedAt === null) newest.push(row);
      }
      return newest.reverse();
    }
    const selected: MessageRow[] = [];
    for (
      let index = this.#indexOf(afterSeq + 1);
      index < this.#rows.length && selected.length < limit;
      index++
    ) {
      const row = this.#rows[index]!;
      if (includeAbandoned || row.abandonedAt === null) selected.push(row);
    }
    return selected;
  }

  put(row: MessageRow): void {
    const index = this.#indexOf(row.seq);
    const previous = this.#rows[index];
    if (previous?.seq === row.seq) {
      this.#rows[index] = row;
      this.log.record(() => {
        this.#rows[index] = previous;
      });
    } else {
      this.#rows.splice(index, 0, row);
      this.log.record(() => this.#rows.splice(index, 1));
    }
  }

  delete(seq: number): void {
    const index = this.#indexOf(seq);
    const previous = this.#rows[index];
    if (previous?.seq !== seq) return;
    this.#rows.splice(index, 1);
    this.log.record(() => this.#rows.splice(index, 0, previous));
  }
}

/** A counter for ids that only grow, changed through the undo log. */
class Counter {
  #last = 0;

  constructor(private readonly log: UndoLog) {}

  next(): number {
    this.#last += 1;
    this.log.record(() => {
      this.#last -= 1;
    });
    return this.#last;
  }

  /** The last number handed out (0 before the first). */
  get last(): number {
    return this.#last;
  }
}

const byId = (a: { id: number }, b: { id: number }) => a.id - b.id;
const bySeq = (a: { seq: number }, b: { seq: number }) => a.seq - b.seq;
const taskKey = (scope: string, id: string) => `${scope}\u0000${id}`;
const ledgerKey = (sessionId: string, idempotencyKey: string) => `${sessionId}\u0000${idempotencyKey}`;

function createTables(log: UndoLog): StoreTables {
  const sessions = new Rows<string, SessionRow>(log);
  const messages = new Rows<string, MessageRows>(log);
  const ledger = new Rows<number, LedgerRow>(log, byId);
  const ledgerIds = new Rows<string, number>(log);
  const ledgerCounter = new Counter(log);
  const tasks = new Rows<string, TaskRow>(log);
  const runs = new Rows<string, RunRow>(log);
  /** Per run, by step name. */
  const steps = new Rows<string, Rows<string, StepRow>>(log);
  const commands = new Rows<number, CommandRow>(log, byId);
  const commandCounter = new Counter(log);
  const sequences = new Rows<string, number>(log);
  const schedules = new Rows<string, ScheduleRow>(log);
  /** Task records deleted, one by one or with their session (the SQLite schema counts them by trigger). */
  const taskDeletions = new Counter(log);

  const messagesOf = (sessionId: string) => {
    let rows = messages.get(sessionId);
    if (!rows) {
      rows = new MessageRows(log);
      messages.set(sessionId, rows);
    }
    return rows;
  };
  const stepsOf = (runId: string) => {
    let rows = steps.get(runId);
    if (!rows) {
      rows = new Rows<string, StepRow>(log);
      steps.set(runId, rows);
    }
    return rows;
  };
  const deleteLedgerEntry = (row: LedgerRow) => {
    ledger.delete(row.id);
    ledgerIds.delete(ledgerKey(row.sessionId, row.idempotencyKey));
  };
  const deleteTask = (scope: string, id: string) => {
    if (tasks.delete(taskKey(scope, id))) taskDeletions.next();
  };
  /** Stores the row; a stored read offset never moves back. Returns the offset stored now. */
  const saveTask = (row: TaskRow): number => {
    const key = taskKey(row.scope, row.id);
    const readOffset = Math.max(tasks.get(key)?.readOffset ?? 0, row.readOffset);
    tasks.set(key, readOffset === row.readOffset ? row : { ...row, readOffset });
    return readOffset;
  };
  const deleteRun = (runId: string) => {
    runs.delete(runId);
    steps.delete(runId);
  };
  const inList = (values: readonly string[] | undefined, value: string) =>
    values === undefined || values.includes(value);
  const updatedBefore = (cutoff: number) => (row: { updatedAt: number }) => row.updatedAt < cutoff;

  return {
    sessions: {
      get: (id) => sessions.get(id),
      exists: (id) => sessions.get(id) !== undefined,
      put: (row) => sessions.set(row.id, row),
      select: (parentId, state) =>
        sessions.select(
          (row) =>
            (parentId === null || row.parentId === parentId) && (state === null || row.state === state),
        ),
      delete(id) {
        // What the SQLite schema's ON DELETE CASCADE does.
        sessions.delete(id);
        messages.delete(id);
        for (const row of ledger.select((entry) => entry.sessionId === id)) deleteLedgerEntry(row);
        for (const row of tasks.select((task) => task.sessionId === id)) deleteTask(row.scope, row.id);
        for (const row of runs.select((run) => run.sessionId === id)) deleteRun(row.runId);
        for (const row of commands.select((command) => command.sessionId === id)) commands.delete(row.id);
        for (const row of schedules.select((schedule) => schedule.sessionId === id))
          schedules.delete(taskKey(row.sessionId, row.id));
      },
    },
    messages: {
      put: (row) => messagesOf(row.sessionId).put(row),
      select: (sessionId, afterSeq, includeAbandoned, limit, beforeSeq) =>
        messages.get(sessionId)?.select(afterSeq, includeAbandoned, limit, beforeSeq) ?? [],
      selectAbandonedBefore: (cutoff) =>
        messages
          .values()
          .flatMap((rows) =>
            rows.select(0, true).filter((row) => row.abandonedAt !== null && row.abandonedAt < cutoff),
          ),
      delete: (sessionId, seq) => messages.get(sessionId)?.delete(seq),
    },
    ledger: {
      get: (id) => ledger.get(id),
      findByKey(sessionId, idempotencyKey) {
        const id = ledgerIds.get(ledgerKey(sessionId, idempotencyKey));
        return id === undefined ? undefined : ledger.get(id);
      },
      insert(row) {
        const id = ledgerCounter.next();
        ledger.set(id, { ...row, id });
        ledgerIds.set(ledgerKey(row.sessionId, row.idempotencyKey), id);
        return id;
      },
      put: (row) => ledger.set(row.id, row),
      select: (sessionId, states, afterId = 0) =>
        ledger.select((row) => row.sessionId === sessionId && inList(states, row.state) && row.id > afterId),
      selectUpdatedBefore: (cutoff) => ledger.select(updatedBefore(cutoff)),
      referencesMessage: (sessionId, seq) =>
        ledger.select((row) => row.sessionId === sessionId && row.deliveredInMessageSeq === seq, 1).length >
        0,
      delete(id) {
        const row = ledger.get(id);
        if (row) deleteLedgerEntry(row);
      },
    },
    tasks: {
      get: (scope, id) => tasks.get(taskKey(scope, id)),
      put: (row) => tasks.set(taskKey(row.scope, row.id), row),
      save: saveTask,
      update(row) {
        const stored = tasks.get(taskKey(row.scope, row.id));
        const same =
          stored !== undefined &&
          stored.sessionId === row.sessionId &&
          stored.startedAt === row.startedAt &&
          stored.reported === row.reported;
        return same ? saveTask(row) : undefined;
      },
      select: (scope, statuses, updatedSince, reported) =>
        tasks.select(
          (row) =>
            (scope === undefined || row.scope === scope) &&
            inList(statuses, row.status) &&
            row.updatedAt >= updatedSince &&
            (reported === undefined || row.reported === (reported ? 1 : 0)),
        ),
      selectUpdatedBefore: (cutoff) => tasks.select(updatedBefore(cutoff)),
      delete: deleteTask,
      deletions: () => taskDeletions.last,
    },
    runs: {
      get: (runId) => runs.get(runId),
      put: (row) => runs.set(row.runId, row),
      select: (sessionId, taskId, statuses) =>
        runs.select(
          (row) =>
            (sessionId === null || row.sessionId === sessionId) &&
            (taskId === null || row.taskId === taskId) &&
            inList(statuses, row.status),
        ),
      selectUpdatedBefore: (cutoff) => runs.select(updatedBefore(cutoff)),
      delete: deleteRun,
    },
    steps: {
      get: (runId, name) => steps.get(runId)?.get(name),
      put: (row) => stepsOf(row.runId).set(row.name, row),
      select: (runId) => (steps.get(runId)?.values() ?? []).sort(bySeq),
      lastSeq: (runId) =>
        (steps.get(runId)?.values() ?? []).reduce((last, row) => Math.max(last, row.seq), 0),
    },
    commands: {
      get: (id) => commands.get(id),
      insert(row) {
        const id = commandCounter.next();
        commands.set(id, { ...row, id });
        return id;
      },
      put: (row) => commands.set(row.id, row),
      selectPending: (runtime, limit) =>
        commands.select((row) => row.runtime === runtime && row.state === 'pending', limit),
      selectPendingBefore: (cutoff) =>
        commands.select((row) => row.state === 'pending' && row.createdAt < cutoff),
      selectSettledBefore: (cutoff) => commands.select((row) => (row.answeredAt ?? row.createdAt) < cutoff),
      delete: (id) => commands.delete(id),
    },
    schedules: {
      get: (sessionId, id) => schedules.get(taskKey(sessionId, id)),
      put: (row) => schedules.set(taskKey(row.sessionId, row.id), row),
      select: (sessionId) =>
        schedules.select((row) => sessionId === undefined || row.sessionId === sessionId),
      delete: (sessionId, id) => void schedules.delete(taskKey(sessionId, id)),
    },
    sequences: {
      get: (kind) => sequences.get(kind) ?? 0,
      set: (kind, last) => sequences.set(kind, last),
      raise(kind, last) {
        if ((sequences.get(kind) ?? 0) < last) sequences.set(kind, last);
      },
    },
  };
}

/** A store backend that keeps everything in this process: nothing survives it, no other process sees it. */
export function createMemoryBackend(): StoreBackend {
  const log = new UndoLog();
  return {
    tables: createTables(log),
    capabilities: Object.freeze({ sharedAcrossProcesses: false, persistent: false }),
    transaction: (body) => log.transaction(body),
    // Nothing of a memory store outlives the process: every write is as durable as it gets at once.
    whenDurable: () => Promise.resolve(),
    describeFailure: (_operation, error) => error,
    close() {},
  };
}
