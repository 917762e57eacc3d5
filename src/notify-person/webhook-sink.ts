/**
 * The webhook sink: POSTs each notice's JSON to one URL, signed (`webhook-signature.ts`), from a bounded
 * queue with a few requests in flight. A failed attempt (no connection, a timeout, HTTP 408, 429 or 5xx)
 * is retried after an exponential back-off with full jitter, up to `maxAttempts`; another 4xx is final.
 * Enqueueing never waits: the caller (the event feed's listener, beside the model's delivery) returns at
 * once whatever the receiver does.
 */
import type { Clock, Logger } from '../tasks/index.js';
import type { PersonNotice } from './person-notice.js';
import type { SentAttempt } from './sent-log.js';
import { signWebhookBody, WEBHOOK_NOTICE_ID_HEADER, WEBHOOK_SIGNATURE_HEADER } from './webhook-signature.js';

export interface WebhookSettings {
  readonly url: string;
  readonly secret: string;
  readonly maxQueue: number;
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly timeoutMs: number;
  readonly concurrency: number;
}

export interface WebhookSinkContext {
  readonly clock: Clock;
  /** [0, 1): the jitter. */
  readonly random: () => number;
  readonly logger: Logger;
  /** Told each state a notice takes here. */
  readonly report: (
    notice: PersonNotice,
    attempt: Omit<SentAttempt, 'sink' | 'target' | 'updatedAt'>,
  ) => void;
}

interface Job {
  readonly notice: PersonNotice;
  readonly body: string;
  attempts: number;
}

/** The origin of a webhook URL: what logs and the sent view may show (never its path, query or credentials). */
export function webhookTarget(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}

/** The delay before attempt `attempt + 1`: full jitter over an exponential ceiling. */
export function backoffDelay(
  attempt: number,
  initialMs: number,
  maxMs: number,
  random: () => number,
): number {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

export class WebhookSink {
  readonly #settings: WebhookSettings;
  readonly #context: WebhookSinkContext;
  readonly #queue: Job[] = [];
  readonly #inFlight = new Set<AbortController>();
  readonly #timers = new Set<() => void>();
  readonly #idleWaiters: Array<() => void> = [];
  /** Jobs waiting out a back-off (they count against the queue bound). */
  #waiting = 0;
  #active = 0;
  #disposed = false;

  constructor(settings: WebhookSettings, context: WebhookSinkContext) {
    this.#settings = settings;
    this.#context = context;
  }

  get target(): string {
    return webhookTarget(this.#settings.url);
  }

  /** Queues a notice; false (and `dropped`) when the queue is full. Never waits. */
  enqueue(notice: PersonNotice): boolean {
    if (this.#disposed) return false;
    if (this.#queue.length + this.#waiting >= this.#settings.maxQueue) {
      this.#context.report(notice, { state: 'dropped', attempts: 0, httpStatus: null, error: 'QUEUE_FULL' });
      return false;
    }
    this.#queue.push({ notice, body: JSON.stringify(notice), attempts: 0 });
    this.#context.report(notice, { state: 'queued', attempts: 0, httpStatus: null, error: null });
    // The request starts after the caller (the feed's listener) has returned.
    queueMicrotask(() => this.#pump());
    return true;
  }

  /** Resolves once nothing is queued, waiting or in flight. */
  whenIdle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Aborts requests in flight and forgets queued notices. Idempotent. */
  dispose(): void {
    this.#disposed = true;
    for (const cancel of this.#timers) cancel();
    this.#timers.clear();
    for (const controller of this.#inFlight) controller.abort();
    this.#queue.length = 0;
    this.#waiting = 0;
    this.#settleIdle();
  }

  #isIdle(): boolean {
    return this.#queue.length === 0 && this.#waiting === 0 && this.#active === 0;
  }

  #settleIdle(): void {
    if (!this.#isIdle()) return;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  #pump(): void {
    while (!this.#disposed && this.#active < this.#settings.concurrency && this.#queue.length > 0) {
      const job = this.#queue.shift() as Job;
      this.#active += 1;
      void this.#attempt(job).finally(() => {
        this.#active -= 1;
        this.#pump();
        this.#settleIdle();
      });
    }
  }

  async #attempt(job: Job): Promise<void> {
    job.attempts += 1;
    const { notice } = job;
    this.#context.report(notice, { state: 'sending', attempts: job.attempts, httpStatus: null, error: null });
    const outcome = await this.#post(job);
    if (this.#disposed) return;
    if (outcome.kind === 'delivered') {
      this.#context.report(notice, {
        state: 'delivered',
        attempts: job.attempts,
        httpStatus: outcome.status,
        error: null,
      });
      return;
    }
    const httpStatus = outcome.kind === 'status' ? outcome.status : null;
    const error = outcome.kind === 'status' ? `HTTP_${outcome.status}` : outcome.code;
    if (!outcome.retryable || job.attempts >= this.#settings.maxAttempts) {
      this.#context.report(notice, { state: 'failed', attempts: job.attempts, httpStatus, error });
      this.#context.logger.warn('a webhook notice could not be delivered', {
        target: this.target,
        noticeId: notice.id,
        attempts: job.attempts,
        error,
      });
      return;
    }
    this.#context.report(notice, { state: 'retrying', attempts: job.attempts, httpStatus, error });
    const { initialBackoffMs, maxBackoffMs } = this.#settings;
    const jittered = backoffDelay(job.attempts, initialBackoffMs, maxBackoffMs, this.#context.random);
    const delay =
      outcome.retryAfterMs === undefined ? jittered : Math.min(maxBackoffMs, outcome.retryAfterMs);
    this.#waiting += 1;
    const cancel = this.#context.clock.schedule(delay, () => {
      this.#timers.delete(cancel);
      this.#waiting -= 1;
      if (this.#disposed) return;
      this.#queue.unshift(job);
      this.#pump();
    });
    this.#timers.add(cancel);
  }

  async #post(job: Job): Promise<PostOutcome> {
    const controller = new AbortController();
    this.#inFlight.add(controller);
    let timedOut = false;
    const cancelTimeout = this.#context.clock.schedule(this.#settings.timeoutMs, () => {
      timedOut = true;
      controller.abort();
    });
    try {
      const timestamp = Math.floor(this.#context.clock.now() / 1000);
      const response = await fetch(this.#settings.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'errand-notify/1',
          [WEBHOOK_NOTICE_ID_HEADER]: job.notice.id,
          [WEBHOOK_SIGNATURE_HEADER]: signWebhookBody(this.#settings.secret, timestamp, job.body),
        },
        body: job.body,
        signal: controller.signal,
        redirect: 'error',
      });
      // The body is not read beyond draining it: a receiver's answer is its status.
      await response.arrayBuffer().catch(() => undefined);
      if (response.ok) return { kind: 'delivered', status: response.status };
      const status = response.status;
      const retryable = status === 408 || status === 429 || status >= 500;
      const retryAfter = Number(response.headers.get('retry-after'));
      return {
        kind: 'status',
        status,
        retryable,
        ...(Number.isFinite(retryAfter) && retryAfter >= 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
      };
    } catch (error) {
      return { kind: 'error', code: timedOut ? 'TIMEOUT' : errorCodeOf(error), retryable: true };
    } finally {
      cancelTimeout();
      this.#inFlight.delete(controller);
    }
  }
}

type PostOutcome =
  | { readonly kind: 'delivered'; readonly status: number }
  | {
      readonly kind: 'status';
      readonly status: number;
      readonly retryable: boolean;
      readonly retryAfterMs?: number;
    }
  | {
      readonly kind: 'error';
      readonly code: string;
      readonly retryable: true;
      readonly retryAfterMs?: undefined;
    };

/** A stable code for a failed request: the system error's code, never its message (it may name the URL). */
function errorCodeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string' && /^[A-Z_]{2,40}$/.test(cause.code)) return cause.code;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z_]{2,40}$/.test(code)) return code;
  return 'REQUEST_FAILED';
}
