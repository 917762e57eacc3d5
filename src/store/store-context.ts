/**
 * What every part of a store shares: its backend's tables, its clock and field bound, and the one place an
 * operation runs. A write is one backend transaction, so a guard and its write are one step even when
 * several processes share a SQLite file, and a failed write leaves nothing behind.
 */
import { StoreClosedError } from './errors.js';
import type { ResolvedSessionStoreOptions } from './options.js';
import type { StoreDurability } from './session-store.js';
import type { StoreBackend, StoreTables } from './store-tables.js';
import { readClock } from './validate-input.js';

export interface StoreContext {
  readonly maxFieldBytes: number;
  /** The store's clock, checked (a clock that returns garbage fails the call, not the data). */
  now(): number;
  /**
   * Runs `body` as one transaction; `operation` names the call in errors ("admit a ledger entry"). A write
   * inside another write joins it as a nested step, so several changes can later be made one transaction.
   * `durability` (default `immediate`): see `StoreDurability`.
   */
  write<T>(operation: string, body: (tables: StoreTables) => T, durability?: StoreDurability): T;
  /** Resolves once every commit so far is durable; rejects with `STORE_CLOSED` once closed. */
  whenDurable(): Promise<void>;
  /** Runs `body` without a transaction: it only reads. */
  read<T>(operation: string, body: (tables: StoreTables) => T): T;
  /** Reads one row with `find` and turns it into its record; `undefined` when there is none. */
  readOne<Row, Record>(
    operation: string,
    find: (tables: StoreTables) => Row | undefined,
    toRecord: (row: Row) => Record,
  ): Record | undefined;
  /** Releases the backend; later operations throw `STORE_CLOSED`. Idempotent. */
  close(): void;
}

export function createStoreContext(
  backend: StoreBackend,
  options: ResolvedSessionStoreOptions,
): StoreContext {
  const { tables } = backend;
  let closed = false;
  function run<T>(
    operation: string,
    body: (tables: StoreTables) => T,
    write: boolean,
    durability?: StoreDurability,
  ): T {
    if (closed) throw new StoreClosedError(operation);
    try {
      return write ? backend.transaction(() => body(tables), durability) : body(tables);
    } catch (error) {
      throw backend.describeFailure(operation, error);
    }
  }
  return {
    maxFieldBytes: options.maxFieldBytes,
    now: () => readClock(options.now),
    write: (operation, body, durability) => run(operation, body, true, durability),
    async whenDurable() {
      if (closed) throw new StoreClosedError('wait for durability');
      try {
        await backend.whenDurable();
      } catch (error) {
        throw backend.describeFailure('wait for durability', error);
      }
    },
    read: (operation, body) => run(operation, body, false),
    readOne(operation, find, toRecord) {
      return run(
        operation,
        (all) => {
          const row = find(all);
          return row === undefined ? undefined : toRecord(row);
        },
        false,
      );
    },
    close() {
      if (closed) return;
      closed = true;
      backend.close();
    },
  };
}
