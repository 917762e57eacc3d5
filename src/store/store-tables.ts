/**
 * The table port: the storage the store's parts (`parts/`) run on. A backend keeps rows and finds them by
 * key or by the few selections below; it decides nothing. Every guard, transition, ordering and retention
 * rule is in the parts, written once, so the SQLite backend (`sqlite-tables.ts`) and the in-memory one
 * (`memory-tables.ts`) refuse and keep the same things. Rows are the shared stored shapes of `rows.ts`.
 *
 * Only the parts call a table, and only inside `StoreContext.read` or `StoreContext.write`.
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
import type { StoreCapabilities, StoreDurability } from './session-store.js';

/**
 * `put` inserts the row or replaces the one with its key; `delete` is a no-op for a missing key. A part
 * that read the stored row in the same write passes it as `previous`: a backend may then write only the
 * fields that differ (the SQLite one does, so indexes over the others are not rewritten). `previous` must
 * be the row as stored now.
 */
export interface SessionTable {
  get(id: string): SessionRow | undefined;
  /** Whether a session with this id exists (no row is read). */
  exists(id: string): boolean;
  put(row: SessionRow, previous?: SessionRow): void;
  /** Any order; `null` is "any". */
  select(parentId: string | null, state: string | null): SessionRow[];
  /** Removes the session with every record of it: messages, ledger entries, task records, runs, commands, schedules. */
  delete(id: string): void;
}

export interface MessageTable {
  put(row: MessageRow, previous?: MessageRow): void;
  /**
   * The session's messages after `afterSeq` (and before `beforeSeq`, when given) in seq order, at most
   * `limit` (`undefined`: all). With `beforeSeq` the limit keeps the newest of them.
   */
  select(
    sessionId: string,
    afterSeq: number,
    includeAbandoned: boolean,
    limit: number | undefined,
    beforeSeq?: number,
  ): MessageRow[];
  /** Abandoned messages of every session abandoned before `cutoff`. */
  selectAbandonedBefore(cutoff: number): MessageRow[];
  delete(sessionId: string, seq: number): void;
}

export interface LedgerTable {
  get(id: number): LedgerRow | undefined;
  findByKey(sessionId: string, idempotencyKey: string): LedgerRow | undefined;
  /** Stores a new entry under the next id (ids only grow, never reused) and returns that id. */
  insert(row: Omit<LedgerRow, 'id'>): number;
  put(row: LedgerRow, previous?: LedgerRow): void;
  /**
   * The session's entries in id order, only those in `states` unless it is `undefined`, and only ids
   * above `afterId` (default 0).
   */
  select(sessionId: string, states: readonly string[] | undefined, afterId?: number): LedgerRow[];
  /** Entries of every session, in any state, last changed before `cutoff`. */
  selectUpdatedBefore(cutoff: number): LedgerRow[];
  /** Whether an entry records its delivery in this message. */
  referencesMessage(sessionId: string, seq: number): boolean;
  delete(id: number): void;
}

export interface TaskTable {
  get(scope: string, id: string): TaskRow | undefined;
  put(row: TaskRow, previous?: TaskRow): void;
  /**
   * Writes the row as `put` does, except that a stored read offset never moves back: returns the read
   * offset the stored row has now (the row's, or the higher one it already had).
   */
  save(row: TaskRow): number;
  /**
   * `save` for a later write of the same attempt: only when a row is stored under the key with the row's
   * session, start and told flag, which this write leaves as they are (so no index over them is rewritten).
   * Returns the read offset as `save` does, or undefined when no such row is stored (nothing is written).
   */
  update(row: TaskRow): number | undefined;
  /**
   * Any order; `scope` `undefined` is every scope, `statuses` `undefined` every status, `reported`
   * `undefined` told or not.
   */
  select(
    scope: string | undefined,
    statuses: readonly string[] | undefined,
    updatedSince: number,
    reported?: boolean,
  ): TaskRow[];
  /** Records of every scope, in any status, written before `cutoff`. */
  selectUpdatedBefore(cutoff: number): TaskRow[];
  delete(scope: string, id: string): void;
  /** How many records were ever deleted, one by one or with their session. */
  deletions(): number;
}

export interface RunTable {
  get(runId: string): RunRow | undefined;
  put(row: RunRow, previous?: RunRow): void;
  /** Any order; `null` and `undefined` are "any". */
  select(sessionId: string | null, taskId: string | null, statuses: readonly string[] | undefined): RunRow[];
  selectUpdatedBefore(cutoff: number): RunRow[];
  /** Removes the run with its steps. */
  delete(runId: string): void;
}

export interface StepTable {
  get(runId: string, name: string): StepRow | undefined;
  put(row: StepRow): void;
  /** The run's steps in seq order. */
  select(runId: string): StepRow[];
  /** The highest seq of the run's steps, 0 when it has none. */
  lastSeq(runId: string): number;
}

export interface CommandTable {
  get(id: number): CommandRow | undefined;
  /** Stores a new command under the next id (ids only grow, never reused) and returns that id. */
  insert(row: Omit<CommandRow, 'id'>): number;
  put(row: CommandRow, previous?: CommandRow): void;
  /** The pending commands addressed to `runtime`, in id order, at most `limit`. */
  selectPending(runtime: string, limit: number): CommandRow[];
  /** Pending commands of every runtime created before `cutoff`, in id order. */
  selectPendingBefore(cutoff: number): CommandRow[];
  /** Commands answered before `cutoff`, and pending ones created before it. */
  selectSettledBefore(cutoff: number): CommandRow[];
  delete(id: number): void;
}

export interface ScheduleTable {
  get(sessionId: string, id: string): ScheduleRow | undefined;
  put(row: ScheduleRow, previous?: ScheduleRow): void;
  /** Any order; `sessionId` `undefined` is every session. */
  select(sessionId: string | undefined): ScheduleRow[];
  delete(sessionId: string, id: string): void;
}

export interface SequenceTable {
  /** The highest number reserved for `kind`, 0 when none was. */
  get(kind: string): number;
  set(kind: string, last: number): void;
  /** Raises the highest number of `kind` to `last` unless it is already that high (no write then). */
  raise(kind: string, last: number): void;
}

export interface StoreTables {
  readonly sessions: SessionTable;
  readonly messages: MessageTable;
  readonly ledger: LedgerTable;
  readonly tasks: TaskTable;
  readonly runs: RunTable;
  readonly steps: StepTable;
  readonly commands: CommandTable;
  readonly sequences: SequenceTable;
  readonly schedules: ScheduleTable;
}

/** Where a store keeps its tables, and how it makes one change all-or-nothing. */
export interface StoreBackend {
  readonly tables: StoreTables;
  readonly capabilities: StoreCapabilities;
  /**
   * Runs `body` so that no other writer interleaves with it and a throw undoes every change it made. A call
   * inside a running `body` is nested: its own throw undoes only its changes, then reaches the outer body.
   * `durability` (default `immediate`) is the outermost call's; a nested call that names none joins it, a
   * nested `immediate` one makes the whole write immediate.
   */
  transaction<T>(body: () => T, durability?: StoreDurability): T;
  /** Resolves once every write committed before the call is durable (see `SessionStore.whenDurable`). */
  whenDurable(): Promise<void>;
  /** The store's error for a failure of this backend (a lock held too long: `STORE_BUSY`), else `error`. */
  describeFailure(operation: string, error: unknown): unknown;
  close(): void;
}
