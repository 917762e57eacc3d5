/**
 * A session's side of the input ledger: admits inputs and notifications, delivers them into the
 * conversation exactly once (the message and the delivered marks in one store step), and discards what
 * can no longer be delivered. Every admitted entry ends delivered or discarded through here. For
 * notifications it is the store-backed `InboxLedger` of the session's inbox, which owns the rules.
 */
import type { LedgerEntry } from '../store/records.js';
import type { DeliveryResult, NewMessage, SessionStore, StoreDurability } from '../store/session-store.js';
import type { SessionId } from '../tasks/index.js';
import type { QueuedNotification, QueuedUserInput, QueuePriority } from './command-queue.js';
import type { DeliveryForm, InboxLedger, NotificationEntry } from './inbox-ledger.js';
import { NotificationDeliveryError } from './notification-delivery-error.js';
import type { SessionEvent } from './session-events.js';

export interface SessionLedgerDependencies {
  readonly sessionId: SessionId;
  readonly store: SessionStore;
  /** The session's current branch generation: notifications of another one are stale. */
  readonly branchGeneration: () => number;
  readonly emit: (event: SessionEvent) => void;
}

export class SessionLedger implements InboxLedger {
  readonly #sessionId: SessionId;
  readonly #store: SessionStore;
  readonly #branchGeneration: () => number;
  readonly #emit: (event: SessionEvent) => void;

  constructor(dependencies: SessionLedgerDependencies) {
    this.#sessionId = dependencies.sessionId;
    this.#store = dependencies.store;
    this.#branchGeneration = dependencies.branchGeneration;
    this.#emit = dependencies.emit;
  }

  /** Writes a person's input as queued; undefined when its idempotency key was used before. */
  admitInput(text: string, priority: QueuePriority, idempotencyKey: string): LedgerEntry | undefined {
    const admission = this.#store.admit({
      sessionId: this.#sessionId,
      kind: 'user_input',
      idempotencyKey,
      priority,
      text,
    });
    return admission.admitted ? admission.entry : undefined;
  }

  /** Writes a notification as queued; undefined when the same key was admitted before. */
  admitNotification(notification: NotificationEntry): LedgerEntry | undefined {
    const admission = this.#store.admit({
      sessionId: this.#sessionId,
      kind: 'notification',
      idempotencyKey: notification.idempotencyKey,
      priority: notification.priority,
      lane: notification.lane,
      branchGeneration: notification.branchGeneration,
      taskId: notification.taskId,
      text: notification.text,
    });
    return admission.admitted ? admission.entry : undefined;
  }

  /** Discards entries by id, without events (queue full, shutdown, a failed delivery). */
  discardEntries(ledgerIds: readonly number[], reason: string): void {
    this.#store.markDiscarded(ledgerIds, reason);
  }

  /** Marks the session's finished task records told: a tool result showed the model how they ended. */
  markEndsTold(taskIds: readonly string[]): void {
    if (taskIds.length > 0) this.#store.markTold(this.#sessionId, taskIds);
  }

  /** Runs `body` as one store transaction, committed with `durability` (immediate when undefined). */
  atomically<T>(body: () => T, durability?: StoreDurability): T {
    return this.#store.transaction(body, durability === undefined ? undefined : { durability });
  }

  /**
   * Appends a message and delivers the ledger entries it carries in one transaction; the tasks of
   * delivered notifications are marked told with them, so a later process never tells them again.
   */
  #commit(
    notifications: readonly QueuedNotification[],
    message: NewMessage,
    durability: StoreDurability | undefined,
  ): DeliveryResult {
    return this.#store.transaction(
      () => {
        const result = this.#store.commitDelivery(
          this.#sessionId,
          notifications.map((notification) => notification.ledgerId),
          message,
        );
        const endings = notifications.filter((notification) => notification.ending !== false);
        if (result.ok && endings.length > 0) {
          this.#store.markTold(this.#sessionId, [
            ...new Set(endings.map((notification) => notification.taskId)),
          ]);
        }
        return result;
      },
      durability === undefined ? undefined : { durability },
    );
  }

  /** Discards queued notifications and tells the session's viewers. */
  discard(notifications: readonly QueuedNotification[], reason: string): void {
    if (notifications.length === 0) return;
    this.discardEntries(
      notifications.map((notification) => notification.ledgerId),
      reason,
    );
    for (const notification of notifications) {
      this.#emit({ type: 'notification-discarded', taskId: notification.taskId, reason });
    }
  }

  /** A person's input, as `text` (after the user-prompt hook). */
  deliverInput(input: QueuedUserInput, text: string): void {
    const result = this.#store.commitDelivery(this.#sessionId, [input.ledgerId], {
      role: 'user',
      content: { text },
      visibility: 'all',
      source: 'user',
    });
    if (result.ok) this.#emit({ type: 'message', message: result.message });
  }

  /**
   * Records queued notifications as delivered: `batch` writes one model-only message (the XML blocks
   * joined by a blank line), `each` one message per notification (mid-turn injection, context ahead of
   * input). Entries the store finds delivered or discarded meanwhile are skipped; one the store finds on
   * another branch is discarded (`branch_changed`). Returns those delivered. A store that throws stops the
   * delivery: `NotificationDeliveryError` names the notifications not delivered.
   */
  deliver(
    notifications: QueuedNotification[],
    form: DeliveryForm,
    source: string,
    durability?: StoreDurability,
  ): QueuedNotification[] {
    const settled = new Set<number>();
    try {
      return form === 'batch'
        ? this.#deliverBatch(notifications, source, settled, durability)
        : this.#deliverEach(notifications, source, settled, durability);
    } catch (error) {
      throw this.#failure(notifications, settled, error);
    }
  }

  #deliverEach(
    notifications: QueuedNotification[],
    source: string,
    settled: Set<number>,
    durability: StoreDurability | undefined,
  ): QueuedNotification[] {
    const delivered: QueuedNotification[] = [];
    for (const notification of notifications) {
      const result = this.#commit(
        [notification],
        {
          role: 'user',
          content: { text: notification.text },
          visibility: 'model-only',
          source,
          branchGeneration: this.#branchGeneration(),
        },
        durability,
      );
      settled.add(notification.ledgerId);
      if (result.ok) {
        delivered.push(notification);
        this.#emit({ type: 'message', message: result.message });
      } else if (result.code === 'LEDGER_ENTRY_STALE_BRANCH') {
        // The branch moved in the store behind the session: the entry can never be delivered.
        this.discard([notification], 'branch_changed');
      }
      // Otherwise already delivered or discarded: nothing to deliver.
    }
    return delivered;
  }

  #deliverBatch(
    notifications: QueuedNotification[],
    source: string,
    settled: Set<number>,
    durability: StoreDurability | undefined,
  ): QueuedNotification[] {
    let pending = notifications;
    while (pending.length > 0) {
      const result = this.#commit(
        pending,
        {
          role: 'user',
          content: { text: pending.map((notification) => notification.text).join('\n\n') },
          visibility: 'model-only',
          source,
          branchGeneration: this.#branchGeneration(),
        },
        durability,
      );
      if (result.ok) {
        this.#emit({ type: 'message', message: result.message });
        return pending;
      }
      // Some entry was already delivered, discarded or is stale: deliver the rest without it.
      const blocked = new Set(result.conflicts.map((entry) => entry.id));
      const stale = pending.filter((notification) => blocked.has(notification.ledgerId));
      if (result.code === 'LEDGER_ENTRY_STALE_BRANCH') this.discard(stale, 'branch_changed');
      for (const id of blocked) settled.add(id);
      pending = pending.filter((notification) => !blocked.has(notification.ledgerId));
    }
    return [];
  }

  #failure(notifications: QueuedNotification[], settled: ReadonlySet<number>, error: unknown): unknown {
    // An error of ours (a bug, not the store) still names what was not delivered.
    const undelivered = notifications.filter((notification) => !settled.has(notification.ledgerId));
    if (undelivered.length === 0) return error;
    return new NotificationDeliveryError(this.#sessionId, undelivered, error);
  }
}
