/**
 * The notification inbox: the queue side of exactly-once delivery, and the one API every surface uses to
 * hand queued `<task-notification>`s to the model — the session's turns, the MCP server's tool results,
 * the AI SDK bridge's steering. It admits a notification (shutdown, branch and told-ending checks, one
 * ledger entry per key), discards one whose end a tool result showed, reserves notifications for a
 * surface (commit once handed over, release if not, discard if the model learned the end another way),
 * and discards what can no longer be delivered. Every rule lives here; where an entry is recorded is the
 * `InboxLedger`'s business (the session's store, or nothing for a volatile inbox).
 */
import {
  endCovers,
  type NotificationLane,
  type TaskNotification,
  ToldEndings,
  validateToldTaskEnd,
} from '../notifications/index.js';
import type { StoreDurability } from '../store/session-store.js';
import { ErrandError, InvalidArgumentError } from '../tasks/index.js';
import type { ToldTaskEnd } from '../tools/index.js';
import { NOOP_TRACING, type SpanParent, type TraceContext, type Tracing } from '../tracing/index.js';
import {
  type CommandQueue,
  type QueuedNotification,
  type QueuePriority,
  validateQueuePriority,
} from './command-queue.js';
import type { DeliveryForm, InboxLedger } from './inbox-ledger.js';
import { NOTIFICATION_DELIVERY_FAILED, NotificationDeliveryError } from './notification-delivery-error.js';
import type { SessionEvent } from './session-events.js';

/** A notification ready for the session's queue (formatted and claimed by the delivery policy). */
export interface SessionNotification {
  readonly taskId: string;
  readonly label: string;
  readonly text: string;
  readonly lane?: NotificationLane;
  readonly priority?: QueuePriority;
  /** The task's branch generation; a stale one is dropped. */
  readonly branchGeneration: number;
  /** Defaults to `task:<id>:<attempt>`-style keys from the policy; identical keys are admitted once. */
  readonly idempotencyKey: string;
  /**
   * The task's attempt this notification is about. With it, a notification whose end the model already
   * read (`task_output`) is not admitted (`result_read`).
   */
  readonly attempt?: number | undefined;
  /** False for a notification about a running task (a workflow's progress). Default true. */
  readonly ending?: boolean | undefined;
  /** The task span's W3C traceparent: the span of this notification's delivery links to it. */
  readonly traceparent?: string | undefined;
}

/** What the session's queue takes of a policy's notification, under `idempotencyKey`. */
export function sessionNotificationOf(
  notification: TaskNotification,
  idempotencyKey: string,
): SessionNotification {
  return {
    taskId: notification.taskId,
    label: notification.label,
    text: notification.text,
    lane: notification.lane,
    priority: notification.priority,
    branchGeneration: notification.branchGeneration,
    idempotencyKey,
    ...(notification.traceparent === undefined ? {} : { traceparent: notification.traceparent }),
  };
}

export type NotificationAdmission =
  | { readonly admitted: true; readonly ledgerId: number }
  | {
      readonly admitted: false;
      /** `result_read`: a tool result told the model the ending first (its stored name, see the glossary). */
      readonly reason: 'shutting_down' | 'branch_changed' | 'duplicate' | 'result_read';
    };

/** A notification an earlier process left queued in the ledger, going back into the queue (a resume). */
export type RestoredNotification = Omit<QueuedNotification, 'kind' | 'queuedAt'>;

/** A notification a surface delivered outside a model turn (see `NotificationInbox.reserve`). */
export interface DeliveredNotification {
  readonly ledgerId: number;
  readonly taskId: string;
  readonly label: string;
  /** The `<task-notification>` text. */
  readonly text: string;
}

/**
 * Notifications a surface took out of the queue to hand over itself, not yet recorded as delivered.
 * Until it is committed, released or discarded, no turn and no other surface sees them; they are still
 * `queued` in the ledger.
 */
export interface NotificationReservation {
  /** The reserved notifications, in queue order (stale ones already dropped). */
  readonly notifications: readonly DeliveredNotification[];
  /**
   * `reserved` until `commit` recorded them, `release` (or the session's shutdown) gave them back, or
   * `discard` dropped them.
   */
  readonly state: 'reserved' | 'committed' | 'released' | 'discarded';
  /**
   * Records them as delivered: one model-only message with the reservation's `source`, and the ledger
   * entries marked delivered, in one store step. Returns those delivered (an entry delivered or discarded
   * meanwhile is left out). If the store fails it throws `NOTIFICATION_DELIVERY_FAILED` and the
   * reservation stays reserved: commit again, or release. Returns nothing once no longer reserved.
   */
  commit(): DeliveredNotification[];
  /** Puts them back at the head of the queue, in order, for the next turn or surface. Idempotent. */
  release(): void;
  /**
   * Drops them without delivering them (the model read their ends with a tool call meanwhile: `reason`
   * `result_read`): their entries become discarded. Idempotent.
   */
  discard(reason: string): void;
}

export interface TakeQueuedNotificationsOptions {
  /** The `source` of the message that records the delivery, e.g. `mcp_tool_result`. */
  readonly source: string;
  /** The most notifications to take; the rest stay queued in order. Default: all. */
  readonly limit?: number;
}

export interface ReserveNotificationsOptions extends TakeQueuedNotificationsOptions {
  /** Only notifications of this lane (the others keep their places). Default: both lanes. */
  readonly lane?: NotificationLane;
  /**
   * The context the delivery span of a later `commit` goes into (the turn or request that hands the
   * notifications over). Default: the context active when `reserve` is called.
   */
  readonly traceContext?: TraceContext;
}

/** What a session's own turn reserves (`reserveForTurn`). */
export interface TurnReservationOptions {
  readonly source: string;
  /** `batch`: one message for all of them (an idle turn's); `each`: one message apiece. */
  readonly form: DeliveryForm;
  /** The last priority taken (an idle turn takes its own priority and those above). Default `later`. */
  readonly upTo?: QueuePriority;
}

/** What the inbox needs from its owner (a session, or the AI SDK bridge). */
/** What the inbox reads of its owner (a session, the AI SDK bridge). */
export interface InboxOwner {
  /** Names the owner in errors. */
  readonly sessionId: string;
  /** The owner's branch generation now: a notification of another one is stale. */
  branchGeneration(): number;
  /** True once shutdown began: nothing is admitted or reserved. */
  isClosing(): boolean;
  /** True while the owner's own drain works the queue: surfaces reserve nothing, the drain delivers in order. */
  isDraining(): boolean;
}

/** What the inbox tells its owner's drain. */
export interface InboxDrain {
  /** A wakeup notification was admitted, or reserved ones came back to the queue: look at it again. */
  wake(): void;
  /** A delivery was recorded: the retry back-off starts over. */
  deliverySucceeded(): void;
  /** The store failed to record a delivery (the notifications are queued again): retry later. */
  deliveryFailed(): void;
}

export interface NotificationInboxContext {
  readonly owner: InboxOwner;
  /** The queue the notifications wait in (a session's also holds inputs and configuration barriers). */
  readonly queue: CommandQueue;
  readonly ledger: InboxLedger;
  readonly drain: InboxDrain;
  /** Epoch milliseconds, for `queuedAt`. */
  now(): number;
  /** Tells the viewers (`notification-queued`, `notification-discarded`). */
  emit(event: SessionEvent): void;
  /** Every notification the inbox discards, after it did (the AI SDK bridge returns claims here). */
  discarded?(notifications: readonly QueuedNotification[], reason: string): void;
  /**
   * A write the store refused (`error`) that must still happen — a told ending whose result a surface
   * already showed — to run again once the store takes writes; it throws `error` when that is not a
   * store failure. Without it such a write throws.
   */
  recordLater?(write: () => void, error: unknown): void;
  /** Where a delivery's span goes (linked to each delivered task's span). Default: none. */
  readonly tracing?: Tracing;
}

/** A reservation with the inbox's own handles on it. */
interface HeldReservation extends NotificationReservation {
  /** What is still reserved (nothing once committed, released or discarded). */
  pending(): readonly QueuedNotification[];
  /** Forgets it without requeueing (shutdown discards its entries). */
  drop(): void;
  /** A tool result showed the model this end: if the reservation is released, these are discarded. */
  markTold(end: ToldTaskEnd): void;
  /** `commit` with the delivery's durability (a turn's: deferred, see `deliverReserved`). */
  commitWith(durability: StoreDurability | undefined): DeliveredNotification[];
}

/**
 * What a surface sees of an inbox (`session.inbox`): admission, marking told, reservations and read-only
 * views. The owner's own steps — its turns' reservations, discards, shutdown — stay with the owner.
 */
export type InboxSurface = Pick<
  NotificationInbox,
  'admit' | 'markTold' | 'markToldWith' | 'wasTold' | 'reserve' | 'take' | 'queued' | 'queuedNotifications'
>;

export class NotificationInbox {
  readonly #context: NotificationInboxContext;
  /** Ends the model read with a tool call: their notifications are discarded, and refused when late. */
  readonly #toldEndings = new ToldEndings();
  /** Notifications a surface holds between reserving and committing, releasing or discarding them. */
  readonly #reservations = new Set<HeldReservation>();

  constructor(context: NotificationInboxContext) {
    this.#context = context;
  }

  /** Reservations a surface holds and has not committed, released or discarded yet. */
  get reservations(): number {
    return this.#reservations.size;
  }

  /** Notifications waiting in the queue (reserved ones not counted). */
  get queued(): number {
    return this.queuedNotifications().length;
  }

  /** The notifications waiting in the queue, in queue order. */
  queuedNotifications(): QueuedNotification[] {
    const queued: QueuedNotification[] = [];
    for (const command of this.#context.queue) if (command.kind === 'notification') queued.push(command);
    return queued;
  }

  /**
   * Admits a notification: refused once shutdown began (`shutting_down`), when its branch generation is
   * not the owner's (`branch_changed`), when a tool result already showed the model that end
   * (`result_read`), or when its key was admitted before (`duplicate`). Otherwise it is written to the
   * ledger and queued; a wakeup-lane one wakes the owner.
   */
  admit(notification: SessionNotification): NotificationAdmission {
    const context = this.#context;
    if (context.owner.isClosing()) return { admitted: false, reason: 'shutting_down' };
    if (notification.branchGeneration !== context.owner.branchGeneration()) {
      context.emit({ type: 'notification-discarded', taskId: notification.taskId, reason: 'branch_changed' });
      return { admitted: false, reason: 'branch_changed' };
    }
    if (this.#toldEndings.covers(notification)) {
      context.emit({ type: 'notification-discarded', taskId: notification.taskId, reason: 'result_read' });
      return { admitted: false, reason: 'result_read' };
    }
    const lane = notification.lane ?? 'wakeup';
    const priority = validateQueuePriority(notification.priority);
    const entry = context.ledger.admitNotification({
      taskId: notification.taskId,
      text: notification.text,
      lane,
      priority,
      branchGeneration: notification.branchGeneration,
      idempotencyKey: notification.idempotencyKey,
    });
    if (entry === undefined) return { admitted: false, reason: 'duplicate' };
    try {
      context.queue.push({
        kind: 'notification',
        priority,
        ledgerId: entry.id,
        taskId: notification.taskId,
        label: notification.label,
        text: notification.text,
        lane,
        branchGeneration: notification.branchGeneration,
        attempt: notification.attempt,
        ...(notification.ending === false ? { ending: false } : {}),
        ...(notification.traceparent === undefined ? {} : { traceparent: notification.traceparent }),
        queuedAt: context.now(),
      });
    } catch (error) {
      context.ledger.discardEntries([entry.id], 'queue_full');
      throw error;
    }
    context.emit({ type: 'notification-queued', taskId: notification.taskId, lane });
    if (lane === 'wakeup') context.drain.wake();
    return { admitted: true, ledgerId: entry.id };
  }

  /**
   * A tool result showed the model how `taskId` ended (attempt `attempt`, when known): its queued
   * notifications of that attempt or an earlier one (all of them when no attempt is known) are discarded —
   * discarded as `result_read`, their claims kept taken — the end is recorded as told, and one of that
   * attempt that arrives later is refused. A reserved one stays with its surface (it may be on its way to
   * the model already); if the surface releases it, it is discarded instead of queued again.
   */
  markTold(end: { readonly taskId: string; readonly attempt?: number | undefined }): void {
    const marking = this.#planMarkTold([end]);
    const ledger = this.#context.ledger;
    try {
      ledger.atomically(() => marking.record());
    } catch (error) {
      // The surface showed the end already: it is discarded here, and recorded once the store takes writes.
      const later = this.#context.recordLater;
      if (later === undefined) throw error;
      later(() => ledger.atomically(() => marking.record()), error);
    }
    marking.apply();
  }

  /**
   * `markTold` for every end in `ends`, written in one step with `write` (the tool result that showed
   * them, when the caller stores it): the result, the discarded notifications and the ends marked told
   * are all recorded, or none is. Only once that write succeeded does the inbox forget them, so if it
   * throws they stay queued, as if the model had not seen the result — it did not. Returns `write`'s value.
   */
  markToldWith<T>(
    ends: readonly { readonly taskId: string; readonly attempt?: number | undefined }[],
    write: () => T,
    durability?: StoreDurability,
  ): T {
    const marking = this.#planMarkTold(ends);
    const value = this.#context.ledger.atomically(() => {
      const written = write();
      marking.record();
      return written;
    }, durability);
    marking.apply();
    return value;
  }

  /** What marking `ends` told writes (`record`) and then changes here (`apply`). */
  #planMarkTold(ends: readonly { readonly taskId: string; readonly attempt?: number | undefined }[]): {
    record(): void;
    apply(): void;
  } {
    const told = ends.map((end) => validateToldTaskEnd(end));
    const context = this.#context;
    const covered = this.queuedNotifications().filter((notification) =>
      told.some((end) => endCovers(end, notification)),
    );
    const taskIds = [...new Set(told.map((end) => end.taskId))];
    return {
      record: () => {
        if (covered.length > 0) {
          context.ledger.discardEntries(
            covered.map((notification) => notification.ledgerId),
            'result_read',
          );
        }
        if (taskIds.length > 0) context.ledger.markEndsTold(taskIds);
      },
      apply: () => {
        for (const end of told) this.#toldEndings.note(end);
        const discarded = new Set<QueuedNotification>(covered);
        context.queue.remove((command) => command.kind === 'notification' && discarded.has(command));
        this.#told(covered, 'result_read');
        // A reserved one may already be on its way; if it comes back, it is not queued again.
        for (const reservation of this.#reservations) for (const end of told) reservation.markTold(end);
      },
    };
  }

  /**
   * Puts back into the queue notifications the ledger still holds as queued from an earlier process (a
   * resumed session): nothing is written, they keep their ledger entries, lanes and order. Those the
   * queue has no room for are discarded (`queue_full`). A wakeup one wakes the owner.
   */
  restore(notifications: readonly RestoredNotification[]): void {
    const context = this.#context;
    const overflow: QueuedNotification[] = [];
    let wake = false;
    for (const notification of notifications) {
      const queued: QueuedNotification = { ...notification, kind: 'notification', queuedAt: context.now() };
      try {
        context.queue.push(queued);
      } catch {
        overflow.push(queued);
        continue;
      }
      context.emit({ type: 'notification-queued', taskId: queued.taskId, lane: queued.lane });
      if (queued.lane === 'wakeup') wake = true;
    }
    this.#discard(overflow, 'queue_full');
    if (wake) context.drain.wake();
  }

  /** True when a tool result already showed the model the end this notification is about. */
  wasTold(notification: { readonly taskId: string; readonly attempt?: number | undefined }): boolean {
    return this.#toldEndings.covers(notification);
  }

  /**
   * Reserves queued notifications for a surface that hands them to the model itself: up to `limit` in
   * queue order (quiet ones included, stopping at a configuration barrier), stale ones dropped. Reserves
   * nothing while the owner's drain works the queue (a turn runs, or a configuration is being applied)
   * or once shutdown began. See `NotificationReservation` for what the surface does next.
   */
  reserve(options: ReserveNotificationsOptions): NotificationReservation {
    const { source, limit } = validateReserveOptions(options);
    const context = this.#context;
    const traceContext = options.traceContext ?? this.#tracing.capture();
    if (context.owner.isDraining() || context.owner.isClosing())
      return this.#hold([], source, 'batch', traceContext);
    const taken = context.queue.takeNotificationsBeforeBarrier('later', limit, options.lane);
    let fresh: QueuedNotification[];
    try {
      // What the surface shows must not be a late result of an abandoned branch.
      fresh = this.#dropStale(taken);
    } catch (error) {
      context.queue.requeue(taken);
      throw new NotificationDeliveryError(context.owner.sessionId, taken, error);
    }
    return this.#hold(fresh, source, 'batch', traceContext);
  }

  /**
   * `reserve` and `commit` in one step, for a surface that knows the notifications reach the model. If the
   * store fails to record them it throws `NOTIFICATION_DELIVERY_FAILED`: nothing was delivered, and they
   * stay queued, in order.
   */
  take(options: TakeQueuedNotificationsOptions): DeliveredNotification[] {
    const reservation = this.reserve(options);
    try {
      return reservation.commit();
    } catch (error) {
      reservation.release();
      if (ErrandError.hasCode(error, NOTIFICATION_DELIVERY_FAILED)) this.#context.drain.deliveryFailed();
      throw error;
    }
  }

  /**
   * Reserves every queued notification up to `upTo`, before a configuration barrier, for the owner's own
   * turn — the one consumer that reserves while its drain works the queue. Commit it with
   * `deliverReserved`.
   */
  reserveForTurn(options: TurnReservationOptions): NotificationReservation {
    const taken = this.#context.queue.takeNotificationsBeforeBarrier(options.upTo ?? 'later');
    // Committed by `deliverReserved` inside the turn: its span goes into the context active then.
    return this.#hold(taken, options.source, options.form, 'active');
  }

  /**
   * Commits a turn's reservation. If the store fails to record it, what was not delivered goes back to
   * the head of the queue, in order, so the queue and the ledger agree — the next turn, idle drain or
   * surface delivers it, once — and the error is rethrown for the turn to report.
   */
  deliverReserved(reservation: NotificationReservation): DeliveredNotification[] {
    try {
      // A turn's delivery may commit with deferred durability: the turn waits for the disk after its next
      // write (the model's reply, on disk before any of its tool calls runs), which covers it too.
      const held = this.#reservations.has(reservation as HeldReservation)
        ? (reservation as HeldReservation)
        : undefined;
      const delivered = held ? held.commitWith('deferred') : reservation.commit();
      this.#context.drain.deliverySucceeded();
      return delivered;
    } catch (error) {
      if (error instanceof NotificationDeliveryError) {
        reservation.release();
        this.#context.drain.deliveryFailed();
      }
      throw error;
    }
  }

  /** Discards the queued notifications `select` picks, with `reason` (a seal, a rewind, a disposal). */
  discardWhere(select: (notification: QueuedNotification) => boolean, reason: string): void {
    const removed = this.#context.queue.remove(
      (command) => command.kind === 'notification' && select(command),
    ) as QueuedNotification[];
    this.#discard(removed, reason);
  }

  /**
   * Shutdown: forgets every reservation a surface still holds (a commit after this records nothing) and
   * returns their ledger ids, for the shutdown to discard with the rest of the queue.
   */
  dropReservations(): number[] {
    const ledgerIds: number[] = [];
    for (const reservation of [...this.#reservations]) {
      for (const notification of reservation.pending()) ledgerIds.push(notification.ledgerId);
      reservation.drop();
    }
    return ledgerIds;
  }

  #discard(notifications: readonly QueuedNotification[], reason: string): void {
    if (notifications.length === 0) return;
    this.#context.ledger.discardEntries(
      notifications.map((notification) => notification.ledgerId),
      reason,
    );
    this.#told(notifications, reason);
  }

  /** Tells the viewers (and the owner) about notifications whose entries were just discarded. */
  #told(notifications: readonly QueuedNotification[], reason: string): void {
    if (notifications.length === 0) return;
    const context = this.#context;
    for (const notification of notifications) {
      context.emit({ type: 'notification-discarded', taskId: notification.taskId, reason });
    }
    context.discarded?.(notifications, reason);
  }

  /** The second branch check, just before a surface shows them and again before they are persisted. */
  #dropStale(notifications: QueuedNotification[]): QueuedNotification[] {
    const generation = this.#context.owner.branchGeneration();
    this.#discard(
      notifications.filter((notification) => notification.branchGeneration !== generation),
      'branch_changed',
    );
    return notifications.filter((notification) => notification.branchGeneration === generation);
  }

  /** Records `notifications` as delivered; a failure names those not delivered (`NotificationDeliveryError`). */
  #record(
    notifications: QueuedNotification[],
    source: string,
    form: DeliveryForm,
    durability: StoreDurability | undefined,
  ): QueuedNotification[] {
    let fresh: QueuedNotification[];
    try {
      fresh = this.#dropStale(notifications);
    } catch (error) {
      throw new NotificationDeliveryError(this.#context.owner.sessionId, notifications, error);
    }
    return this.#context.ledger.deliver(fresh, form, source, durability);
  }

  get #tracing(): Tracing {
    return this.#context.tracing ?? NOOP_TRACING;
  }

  /**
   * Records a delivery inside its span: `deliver_notifications`, in `parent` (the delivering turn or
   * request), with a link to each notification's task span — an async continuation, not a child.
   */
  #recordTraced(
    notifications: QueuedNotification[],
    source: string,
    form: DeliveryForm,
    parent: SpanParent,
    durability?: StoreDurability,
  ): QueuedNotification[] {
    const tracing = this.#tracing;
    if (!tracing.enabled || notifications.length === 0) {
      return this.#record(notifications, source, form, durability);
    }
    const links = [];
    for (const notification of notifications) {
      if (notification.traceparent === undefined) continue;
      links.push({
        traceparent: notification.traceparent,
        attributes: {
          'errand.task.id': notification.taskId,
          'errand.task.attempt': notification.attempt,
          'errand.notification.ledger_id': notification.ledgerId,
        },
      });
    }
    const span = tracing.startSpan('deliver_notifications', {
      parent,
      links,
      attributes: {
        'gen_ai.conversation.id': this.#context.owner.sessionId,
        'errand.notification.source': source,
        'errand.notification.count': notifications.length,
        'errand.notification.task_ids': notifications.map((notification) => notification.taskId).join(','),
      },
    });
    try {
      const delivered = this.#record(notifications, source, form, durability);
      span.setAttributes({ 'errand.notification.delivered': delivered.length });
      return delivered;
    } catch (error) {
      span.setError(error instanceof Error ? error.message : String(error), 'delivery_failed');
      throw error;
    } finally {
      span.end();
    }
  }

  #hold(
    notifications: QueuedNotification[],
    source: string,
    form: DeliveryForm,
    parent: SpanParent,
  ): HeldReservation {
    let pending = notifications;
    let state: NotificationReservation['state'] = notifications.length === 0 ? 'committed' : 'reserved';
    /** Ledger ids whose end the model read while they were reserved. */
    const discarded = new Set<number>();
    const settle = (next: NotificationReservation['state']): void => {
      state = next;
      this.#reservations.delete(reservation);
    };
    const reservation: HeldReservation = {
      get state() {
        return state;
      },
      notifications: notifications.map(toDelivered),
      pending: () => (state === 'reserved' ? pending : []),
      drop: () => settle('released'),
      markTold: (end) => {
        for (const notification of pending) {
          if (endCovers(end, notification)) discarded.add(notification.ledgerId);
        }
      },
      commit: () => reservation.commitWith(undefined),
      commitWith: (durability) => {
        if (state !== 'reserved') return [];
        let delivered: QueuedNotification[];
        try {
          delivered = this.#recordTraced(pending, source, form, parent, durability);
        } catch (error) {
          // Recorded in part (a conflict moved some out of the way) or not at all: the rest stay reserved.
          pending = error instanceof NotificationDeliveryError ? [...error.undelivered] : [];
          throw error;
        }
        settle('committed');
        this.#context.drain.deliverySucceeded();
        return delivered.map(toDelivered);
      },
      release: () => {
        if (state !== 'reserved') return;
        settle('released');
        // The model read these ends meanwhile: telling them now would be the second time.
        this.#discard(
          pending.filter((notification) => discarded.has(notification.ledgerId)),
          'result_read',
        );
        this.#context.queue.requeue(pending.filter((notification) => !discarded.has(notification.ledgerId)));
        this.#context.drain.wake();
      },
      discard: (reason) => {
        if (state !== 'reserved') return;
        settle('discarded');
        this.#discard(pending, reason);
      },
    };
    if (state === 'reserved') this.#reservations.add(reservation);
    return reservation;
  }
}

function validateReserveOptions(options: TakeQueuedNotificationsOptions): {
  source: string;
  limit: number;
} {
  if (typeof options?.source !== 'string' || options.source === '') {
    throw new InvalidArgumentError('source', 'a non-empty string', options?.source);
  }
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  if (limit !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(limit) || limit < 1)) {
    throw new InvalidArgumentError('limit', 'a positive integer', options.limit);
  }
  return { source: options.source, limit };
}

function toDelivered(notification: QueuedNotification): DeliveredNotification {
  return {
    ledgerId: notification.ledgerId,
    taskId: notification.taskId,
    label: notification.label,
    text: notification.text,
  };
}
