/**
 * The port between a notification inbox and where its entries are recorded: the session's input ledger
 * in the store (`SessionLedger`), or nothing at all (`volatileInboxLedger`, for an owner without a
 * store). A ledger writes; every rule about what may be admitted, delivered or discarded stays in the
 * inbox, so another ledger (another process's view of the same SQLite file, a Redis one) adds no copy.
 */
import type { NotificationLane } from '../notifications/index.js';
import type { StoreDurability } from '../store/session-store.js';
import type { QueuedNotification, QueuePriority } from './command-queue.js';

/** `batch`: one message for every notification delivered together. `each`: one message apiece. */
export type DeliveryForm = 'batch' | 'each';

/** A notification as the ledger records it when it is admitted. */
export interface NotificationEntry {
  readonly taskId: string;
  readonly text: string;
  readonly lane: NotificationLane;
  readonly priority: QueuePriority;
  readonly branchGeneration: number;
  readonly idempotencyKey: string;
}

/**
 * Where an inbox records what it admits, delivers and discards. The session's `SessionLedger` writes the
 * store's input ledger; `volatileInboxLedger()` records nothing. The ledger owns no rule: it writes.
 */
export interface InboxLedger {
  /** Writes a notification as queued; its entry, or undefined when the same key was admitted before. */
  admitNotification(entry: NotificationEntry): { readonly id: number } | undefined;
  /**
   * Records notifications as delivered in `form`, and their tasks' endings as told, in one write; returns
   * those it recorded (it skips entries the store settled meanwhile). Throws `NotificationDeliveryError`
   * naming the ones it did not record. `durability`: the store's (`SessionStore.transaction`), default
   * immediate.
   */
  deliver(
    notifications: QueuedNotification[],
    form: DeliveryForm,
    source: string,
    durability?: StoreDurability,
  ): QueuedNotification[];
  /** Marks entries discarded with `reason`. */
  discardEntries(ledgerIds: readonly number[], reason: string): void;
  /**
   * Records that the model was told how these tasks ended (by a tool result), so a later process
   * never tells them again.
   */
  markEndsTold(taskIds: readonly string[]): void;
  /** Runs `body` (writes of this ledger, and the caller's own) as one write: all of it or none. */
  /** Runs `body` as one write, committed with `durability` (the store's default when undefined). */
  atomically<T>(body: () => T, durability?: StoreDurability): T;
}

/**
 * A ledger that records nothing, for an inbox whose owner keeps no store (the AI SDK bridge): entries
 * get increasing ids, every key is new, and a delivery always succeeds.
 */
export function volatileInboxLedger(): InboxLedger {
  let lastId = 0;
  return {
    admitNotification: () => ({ id: ++lastId }),
    deliver: (notifications) => notifications,
    discardEntries: () => {},
    markEndsTold: () => {},
    atomically: (body) => body(),
  };
}
