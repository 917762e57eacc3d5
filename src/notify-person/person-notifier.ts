/**
 * Tells a person who is not watching: follows the background event feed and sends each task end (a
 * failure as `task-failed`) once, plus the monitor matches and "needs input" the host reports, to the
 * configured sinks — a signed webhook, the desktop (`notify-send`), the dashboard page's browser
 * notifications — each behind its own filter and rate limit. Every step is a synchronous hand-off to a
 * queue: the feed's listener, which runs beside the model's delivery, never waits on a sink.
 */
import { randomUUID } from 'node:crypto';
import type { BackgroundEvent, BackgroundTaskFacts } from '../events/index.js';
import { consoleLogger, type Logger } from '../tasks/index.js';
import { DesktopSink } from './desktop-sink.js';
import { type QuietSource, watchForInput } from './input-watch.js';
import { matchesFilter, type NoticeFilter } from './notice-filter.js';
import {
  type PersonNotifierOptions,
  personNotifierOptions,
  type ResolvedPersonNotifierOptions,
} from './notifier-options.js';
import { buildNotice, describeEnd, isFailedEnd, type PersonNotice } from './person-notice.js';
import { RateLimiter } from './rate-limit.js';
import { type SentAttempt, type SentListener, SentLog, type SentRecord, type SinkName } from './sent-log.js';
import { WebhookSink } from './webhook-sink.js';

/** A sink as the dashboard describes it (never its key, never a URL's path or query). */
export interface SinkDescription {
  readonly sink: SinkName;
  readonly target: string;
  /** False for a desktop sink with no `notify-send` on this host. */
  readonly available: boolean;
}

export type BrowserNoticeListener = (notice: PersonNotice) => void;

export interface PersonNotifier {
  readonly sinks: readonly SinkDescription[];
  /** A monitor matched lines of a running background task. */
  monitorMatched(taskId: string, lines: readonly string[]): void;
  /** A background task waits for a person (a terminal program at a prompt). */
  inputNeeded(taskId: string): void;
  /** Reports `inputNeeded(taskId)` whenever `source` goes quiet after output; returns the stop. */
  watchInput(taskId: string, source: QuietSource): () => void;
  /** What was sent, newest first. */
  sent(limit?: number): SentRecord[];
  subscribeSent(listener: SentListener): () => void;
  /** The notices for dashboard pages (their browser notifications). */
  subscribeBrowser(listener: BrowserNoticeListener): () => void;
  /** Resolves once every sink's queue is empty and nothing is in flight. */
  whenIdle(): Promise<void>;
  /** Stops following the feed, aborts requests in flight, forgets queued notices. Idempotent. */
  dispose(): void;
}

export function createPersonNotifier(options: PersonNotifierOptions): PersonNotifier {
  return new FeedPersonNotifier(personNotifierOptions.resolve(options));
}

interface Route {
  readonly description: SinkDescription;
  readonly filter: NoticeFilter;
  readonly limiter: RateLimiter;
  readonly send: (notice: PersonNotice) => void;
}

class FeedPersonNotifier implements PersonNotifier {
  readonly sinks: readonly SinkDescription[];
  readonly #options: ResolvedPersonNotifierOptions;
  readonly #logger: Logger;
  readonly #log: SentLog;
  readonly #routes: Route[] = [];
  readonly #webhook: WebhookSink | undefined;
  readonly #desktop: DesktopSink | undefined;
  readonly #browserListeners = new Set<BrowserNoticeListener>();
  /** Ends already sent (`<taskId>#<attempt>`), oldest first, bounded. */
  readonly #sentEnds = new Set<string>();
  readonly #unsubscribe: () => void;
  #disposed = false;

  constructor(options: ResolvedPersonNotifierOptions) {
    this.#options = options;
    const { clock } = options;
    this.#logger = options.logger ?? consoleLogger;
    this.#log = new SentLog(options.sentLogSize);
    const reporter =
      (sink: SinkName, target: () => string) =>
      (notice: PersonNotice, attempt: Omit<SentAttempt, 'sink' | 'target' | 'updatedAt'>) =>
        this.#log.record(notice, { ...attempt, sink, target: target(), updatedAt: clock.now() });
    if (options.webhook !== undefined) {
      const { url, secret, rateLimit, events, sessions, kinds, ...bounds } = options.webhook;
      const webhook: WebhookSink = new WebhookSink(
        { url, secret, ...bounds },
        {
          clock,
          random: options.random,
          logger: this.#logger,
          report: reporter('webhook', (): string => webhook.target),
        },
      );
      this.#webhook = webhook;
      this.#routes.push({
        description: { sink: 'webhook', target: webhook.target, available: true },
        filter: { events, sessions, kinds },
        limiter: new RateLimiter(rateLimit, clock),
        send: (notice) => webhook.enqueue(notice),
      });
    }
    if (options.desktop !== false) {
      const { rateLimit, events, sessions, kinds, ...settings } = options.desktop;
      const desktop = new DesktopSink(settings, {
        clock,
        logger: this.#logger,
        report: reporter('desktop', () => 'notify-send'),
      });
      this.#desktop = desktop;
      this.#routes.push({
        description: { sink: 'desktop', target: 'notify-send', available: desktop.available },
        filter: { events, sessions, kinds },
        limiter: new RateLimiter(rateLimit, clock),
        send: (notice) => desktop.enqueue(notice),
      });
    }
    if (options.browser !== false) {
      const { rateLimit, events, sessions, kinds } = options.browser;
      const report = reporter('browser', () => 'browser');
      this.#routes.push({
        description: { sink: 'browser', target: 'browser', available: true },
        filter: { events, sessions, kinds },
        limiter: new RateLimiter(rateLimit, clock),
        send: (notice) => this.#publishToBrowsers(notice, report),
      });
    }
    this.sinks = Object.freeze(this.#routes.map((route) => route.description));
    this.#unsubscribe = options.feed.subscribe((event) => this.#onEvent(event));
  }

  monitorMatched(taskId: string, lines: readonly string[]): void {
    const facts = this.#facts(taskId);
    if (facts === undefined) return;
    const shown = lines.length === 1 ? '1 line' : `${lines.length} lines`;
    this.#dispatch(
      buildNotice({
        id: randomUUID(),
        event: 'monitor-match',
        at: this.#options.clock.now(),
        facts,
        summary: `${facts.taskId} ${JSON.stringify(facts.label)}: a monitor matched ${shown}`,
        lines,
      }),
    );
  }

  inputNeeded(taskId: string): void {
    const facts = this.#facts(taskId);
    if (facts === undefined || facts.status !== 'running') return;
    this.#dispatch(
      buildNotice({
        id: randomUUID(),
        event: 'input-needed',
        at: this.#options.clock.now(),
        facts,
        summary: `${facts.taskId} ${JSON.stringify(facts.label)} is waiting for input`,
      }),
    );
  }

  watchInput(taskId: string, source: QuietSource): () => void {
    return watchForInput(source, {
      quietMs: this.#options.inputQuietMs,
      clock: this.#options.clock,
      onQuiet: () => this.inputNeeded(taskId),
    });
  }

  sent(limit?: number): SentRecord[] {
    return this.#log.list(limit);
  }

  subscribeSent(listener: SentListener): () => void {
    return this.#log.subscribe(listener);
  }

  subscribeBrowser(listener: BrowserNoticeListener): () => void {
    this.#browserListeners.add(listener);
    return () => this.#browserListeners.delete(listener);
  }

  async whenIdle(): Promise<void> {
    await Promise.all([this.#webhook?.whenIdle(), this.#desktop?.whenIdle()]);
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#unsubscribe();
    this.#webhook?.dispose();
    this.#desktop?.dispose();
    this.#browserListeners.clear();
  }

  #facts(taskId: string): BackgroundTaskFacts | undefined {
    if (this.#disposed) return undefined;
    try {
      return this.#options.feed.find(taskId);
    } catch {
      return undefined;
    }
  }

  #onEvent(event: BackgroundEvent): void {
    if (this.#disposed || event.type !== 'BackgroundTaskCompleted') return;
    const key = `${event.taskId}#${event.attempt}`;
    if (this.#sentEnds.has(key)) return;
    this.#sentEnds.add(key);
    if (this.#sentEnds.size > this.#options.maxRememberedEnds) {
      const oldest = this.#sentEnds.values().next().value;
      if (oldest !== undefined) this.#sentEnds.delete(oldest);
    }
    this.#dispatch(
      buildNotice({
        id: randomUUID(),
        event: isFailedEnd(event) ? 'task-failed' : 'task-ended',
        at: event.endedAt ?? event.at,
        facts: event,
        summary: describeEnd(event),
      }),
    );
  }

  #dispatch(notice: PersonNotice): void {
    for (const route of this.#routes) {
      if (!matchesFilter(route.filter, notice)) continue;
      if (!route.limiter.take()) {
        this.#log.record(notice, {
          sink: route.description.sink,
          target: route.description.target,
          state: 'rate-limited',
          attempts: 0,
          httpStatus: null,
          error: null,
          updatedAt: this.#options.clock.now(),
        });
        continue;
      }
      try {
        route.send(notice);
      } catch (error) {
        this.#logger.warn('a notification sink failed', {
          sink: route.description.sink,
          error: error instanceof Error ? error.name : 'unknown',
        });
      }
    }
  }

  #publishToBrowsers(
    notice: PersonNotice,
    report: (notice: PersonNotice, attempt: Omit<SentAttempt, 'sink' | 'target' | 'updatedAt'>) => void,
  ): void {
    let reached = 0;
    for (const listener of this.#browserListeners) {
      try {
        listener(notice);
        reached += 1;
      } catch {
        // One page's stream failing leaves the others.
      }
    }
    report(notice, {
      state: reached > 0 ? 'delivered' : 'dropped',
      attempts: reached,
      httpStatus: null,
      error: reached > 0 ? null : 'NO_OPEN_PAGE',
    });
  }
}
