/**
 * Commits the notifications a tool result carries only once that result was handed to the transport.
 * The tool callback reserves them (`reserveQueuedNotificationsFor`); the SDK sends the answer later,
 * through `transport.send`, or not at all when the request was cancelled or the connection closed. This
 * watches the server's transport: a result that was sent while the connection was still open commits
 * its notifications (recorded once in the ledger); one that was not — the send failed, the connection
 * closed first, the request was aborted, or the answer went out without them — releases them to the head
 * of the session's queue, for the next result on this or a later connection (or for shutdown, which
 * discards them: a resumed session never delivers them twice).
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { NotificationReservation } from '../session/index.js';
import type { Logger } from '../tasks/index.js';
import { ErrandError } from '../tasks/index.js';
import {
  carriesNotificationBlock,
  type ReservingNotificationInbox,
  reserveQueuedNotificationsFor,
} from './in-band-notifications.js';

export interface ResultDeliveriesDependencies {
  readonly inbox: ReservingNotificationInbox;
  /** The transport the server is connected to now; undefined once the connection closed. */
  readonly transport: () => Transport | undefined;
  readonly logger: Logger;
}

interface Delivery {
  readonly transport: Transport;
  readonly requestId: RequestId;
  readonly block: string;
  readonly reservation: NotificationReservation;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
  /** `waiting` for the SDK to send the answer, `sending` while the transport has it, then `done`. */
  state: 'waiting' | 'sending' | 'done';
}

export class ResultDeliveries {
  readonly #inbox: ReservingNotificationInbox;
  readonly #transport: () => Transport | undefined;
  readonly #logger: Logger;
  /** Deliveries not done yet, per transport and request id. */
  readonly #open = new Map<Transport, Map<RequestId, Delivery>>();
  readonly #watched = new WeakSet<Transport>();
  /** Sent, but the store failed to record them: recorded before the next result, never sent again. */
  readonly #unrecorded = new Set<NotificationReservation>();

  constructor(dependencies: ResultDeliveriesDependencies) {
    this.#inbox = dependencies.inbox;
    this.#transport = dependencies.transport;
    this.#logger = dependencies.logger;
  }

  /**
   * Appends up to `limit` queued notifications to the answer of request `requestId` and watches that
   * answer's send. `result` unchanged when the request was aborted, the connection is closed, or nothing
   * is queued.
   */
  attach(result: CallToolResult, requestId: RequestId, signal: AbortSignal, limit: number): CallToolResult {
    this.recordUnrecorded();
    // An aborted request's answer is never sent: its notifications stay queued for the next one.
    if (signal.aborted) return result;
    const transport = this.#transport();
    if (transport === undefined) return result;
    let reserved: ReturnType<typeof reserveQueuedNotificationsFor>;
    try {
      reserved = reserveQueuedNotificationsFor(result, this.#inbox, limit);
    } catch (error) {
      this.#logger.warn('reserving queued notifications for a tool result failed; they stay queued', {
        error: errorText(error),
      });
      return result;
    }
    if (reserved === undefined) return result;
    this.#watch(transport);
    const requests = this.#open.get(transport) ?? new Map<RequestId, Delivery>();
    this.#open.set(transport, requests);
    // A request id the client reused while its first request was open: the first answer cannot be told apart.
    const earlier = requests.get(requestId);
    if (earlier) this.#release(earlier, 'the client reused its request id');
    const delivery: Delivery = {
      transport,
      requestId,
      block: reserved.block,
      reservation: reserved.reservation,
      signal,
      onAbort: () => this.#aborted(delivery),
      state: 'waiting',
    };
    requests.set(requestId, delivery);
    signal.addEventListener('abort', delivery.onAbort, { once: true });
    return reserved.result;
  }

  /** Records deliveries whose results were sent while the store failed. */
  recordUnrecorded(): void {
    for (const reservation of [...this.#unrecorded]) {
      try {
        reservation.commit();
        this.#unrecorded.delete(reservation);
      } catch (error) {
        this.#logger.warn('recording notifications a tool result carried failed again; retried later', {
          error: errorText(error),
          taskIds: reservation.notifications.map((notification) => notification.taskId),
        });
        return;
      }
    }
  }

  /** The connection is going away: what was not sent goes back to the queue. */
  releaseAll(): void {
    for (const requests of [...this.#open.values()]) {
      for (const delivery of [...requests.values()]) this.#release(delivery, 'the server closed');
    }
    this.recordUnrecorded();
  }

  /** Watches the transport's sends (once per transport): a watched answer settles its delivery. */
  #watch(transport: Transport): void {
    if (this.#watched.has(transport)) return;
    this.#watched.add(transport);
    const send = transport.send.bind(transport);
    transport.send = async (message, options) => {
      const delivery = this.#deliveryOf(transport, message);
      if (delivery === undefined) return send(message, options);
      if (!('result' in message) || !carriesNotificationBlock(message.result, delivery.block)) {
        // The request was answered without them (an error, or a result built after ours).
        this.#release(delivery, undefined);
        return send(message, options);
      }
      delivery.state = 'sending';
      try {
        await send(message, options);
      } catch (error) {
        this.#release(delivery, errorText(error));
        throw error;
      }
      if (delivery.state !== 'sending') return;
      // Handed over while the connection was still open: delivered. Closed meanwhile: it does not count.
      if (this.#transport() === transport) this.#commit(delivery);
      else this.#release(delivery, 'the connection closed while the result was being sent');
    };
  }

  #deliveryOf(transport: Transport, message: JSONRPCMessage): Delivery | undefined {
    if (!('id' in message) || message.id === undefined) return undefined;
    if (!('result' in message || 'error' in message)) return undefined;
    return this.#open.get(transport)?.get(message.id);
  }

  #aborted(delivery: Delivery): void {
    // Aborted before the SDK sent the answer: it never will. While sending, a closed connection decides.
    if (delivery.state === 'waiting')
      this.#release(delivery, 'the request was aborted or the connection closed');
    else if (delivery.state === 'sending' && this.#transport() !== delivery.transport) {
      this.#release(delivery, 'the connection closed while the result was being sent');
    }
  }

  #finish(delivery: Delivery): boolean {
    if (delivery.state === 'done') return false;
    delivery.state = 'done';
    delivery.signal.removeEventListener('abort', delivery.onAbort);
    const requests = this.#open.get(delivery.transport);
    if (requests?.get(delivery.requestId) === delivery) requests.delete(delivery.requestId);
    if (requests?.size === 0) this.#open.delete(delivery.transport);
    return true;
  }

  /** Puts the notifications back in the queue; `reason` (when something went wrong) is logged. */
  #release(delivery: Delivery, reason: string | undefined): void {
    if (!this.#finish(delivery)) return;
    delivery.reservation.release();
    if (reason === undefined) return;
    const count = delivery.reservation.notifications.length;
    this.#logger.warn(
      `a tool result carrying ${count} task notification${count === 1 ? '' : 's'} was not sent; they stay queued for the next result`,
      {
        error: reason,
        requestId: delivery.requestId,
        taskIds: delivery.reservation.notifications.map((notification) => notification.taskId),
      },
    );
  }

  #commit(delivery: Delivery): void {
    if (!this.#finish(delivery)) return;
    try {
      delivery.reservation.commit();
    } catch (error) {
      // The client has them: they must not be sent again. Recorded as soon as the store works.
      this.#unrecorded.add(delivery.reservation);
      this.#logger.warn(
        'a tool result carried task notifications but the store failed to record their delivery; recorded at the next tool result, not sent again',
        {
          error: errorText(error),
          ...(ErrandError.isInstance(error) ? { code: error.code } : {}),
          taskIds: delivery.reservation.notifications.map((notification) => notification.taskId),
        },
      );
    }
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
