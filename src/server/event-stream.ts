/**
 * Server-sent events of the background event feed. A new client gets the level signal; a
 * reconnecting one (`Last-Event-ID`) gets what it missed, or a reset plus the level when the replay
 * ring no longer holds it. Each event is sent with its projected work, so a viewer needs no reducer
 * of its own. A client whose unsent data passes its budget is dropped (it reconnects and resumes).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type BackgroundEvent,
  type BackgroundEventFeed,
  type BackgroundWork,
  isBackgroundTaskEvent,
  toBackgroundWork,
} from '../events/index.js';
import type { PersonNotifier } from '../notify-person/index.js';
import type { Logger } from '../tasks/index.js';
import { DashboardRequestError, SECURITY_HEADERS } from './http-response.js';

export interface EventStreamOptions {
  readonly feed: BackgroundEventFeed;
  /** Browser notices, sent as `event: notice` (no id: they are not replayed after a reconnect). */
  readonly notices?: Pick<PersonNotifier, 'subscribeBrowser'> | undefined;
  readonly heartbeatMs: number;
  readonly maxClientBufferBytes: number;
  readonly maxClients: number;
  readonly logger: Logger;
}

/** How long a browser waits before reconnecting a dropped stream. */
const RETRY_MS = 2000;

interface Client {
  readonly response: ServerResponse;
  /** Unsent bytes beyond which the client is dropped: its budget on top of what it was sent at connect. */
  readonly allowance: number;
  readonly unsubscribe: () => void;
  readonly heartbeat: ReturnType<typeof setInterval>;
}

/** The SSE id of an event: `<streamId>:<eventId>`, so ids from another feed are never mistaken for ours. */
export function formatEventId(streamId: string, eventId: number): string {
  return `${streamId}:${eventId}`;
}

/** The event id in a Last-Event-ID of this stream; null for a foreign or malformed one. */
export function parseEventId(streamId: string, value: string): number | null {
  const separator = value.lastIndexOf(':');
  if (separator < 0 || value.slice(0, separator) !== streamId) return null;
  const digits = value.slice(separator + 1);
  if (!/^\d{1,15}$/.test(digits)) return null;
  return Number(digits);
}

/**
 * The JSON sent for an event. A task event: the event plus `work`, what a viewer shows for it (null for a
 * removed task). A level:
 * its envelope plus `works`, the projected works (its raw facts are left out: a level can be large, and
 * the works are what a viewer replaces its state with).
 */
export function eventPayload(event: BackgroundEvent): Record<string, unknown> {
  if (isBackgroundTaskEvent(event)) return { ...event, work: toBackgroundWork(event) };
  // A removed task: the viewer drops what it shows for it.
  if (event.type === 'BackgroundTaskRemoved') return { ...event, work: null };
  const { tasks, ...envelope } = event;
  const works: BackgroundWork[] = tasks.map(toBackgroundWork);
  return { ...envelope, works };
}

export class EventStreamHub {
  readonly #options: EventStreamOptions;
  readonly #clients = new Set<Client>();
  #dropped = 0;

  constructor(options: EventStreamOptions) {
    this.#options = options;
  }

  get clientCount(): number {
    return this.#clients.size;
  }

  /** Clients dropped for falling behind, since the hub started. */
  get droppedCount(): number {
    return this.#dropped;
  }

  open(request: IncomingMessage, response: ServerResponse, url: URL): void {
    if (this.#clients.size >= this.#options.maxClients) {
      const limit = this.#options.maxClients;
      throw new DashboardRequestError(
        503,
        'TOO_MANY_EVENT_CLIENTS',
        `This dashboard already serves ${limit} live event ${limit === 1 ? 'stream' : 'streams'}, its limit (the server option maxEventClients, or --max-event-clients): close other dashboard pages, or restart it with a higher limit`,
        { 'Retry-After': '5' },
      );
    }
    const { feed } = this.#options;
    const lastEventId = request.headers['last-event-id'] ?? url.searchParams.get('lastEventId') ?? undefined;
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    response.socket?.setNoDelay(true);
    response.write(`retry: ${RETRY_MS}\n\n`);

    // Replay and subscription happen in one synchronous step: no event can fall between them.
    if (typeof lastEventId === 'string' && lastEventId !== '') {
      const resumeFrom = parseEventId(feed.streamId, lastEventId);
      const replay =
        resumeFrom === null
          ? { kind: 'reset' as const, reason: 'unknown_id' as const }
          : feed.since(resumeFrom);
      if (replay.kind === 'events') {
        for (const event of replay.events) this.#write(response, event);
      } else {
        response.write(`event: reset\ndata: ${JSON.stringify({ reason: replay.reason })}\n\n`);
        this.#write(response, feed.level());
      }
    } else {
      this.#write(response, feed.level());
    }

    const stopEvents = feed.subscribe((event) => this.#send(client, event));
    const stopNotices = this.#options.notices?.subscribeBrowser((notice) => {
      client.response.write(`event: notice\ndata: ${JSON.stringify(notice)}\n\n`);
      this.#dropIfBehind(client);
    });
    const client: Client = {
      response,
      allowance: response.writableLength + this.#options.maxClientBufferBytes,
      unsubscribe: () => {
        stopEvents();
        stopNotices?.();
      },
      heartbeat: setInterval(() => this.#heartbeat(client), this.#options.heartbeatMs),
    };
    client.heartbeat.unref?.();
    this.#clients.add(client);
    response.on('close', () => this.#remove(client));
  }

  /** Ends every stream (the server is closing). */
  closeAll(): void {
    for (const client of [...this.#clients]) {
      this.#remove(client);
      client.response.end();
    }
  }

  #write(response: ServerResponse, event: BackgroundEvent): void {
    const id = formatEventId(this.#options.feed.streamId, event.id);
    response.write(`id: ${id}\nevent: ${event.type}\ndata: ${JSON.stringify(eventPayload(event))}\n\n`);
  }

  #send(client: Client, event: BackgroundEvent): void {
    this.#write(client.response, event);
    this.#dropIfBehind(client);
  }

  #heartbeat(client: Client): void {
    client.response.write(': heartbeat\n\n');
    this.#dropIfBehind(client);
  }

  #dropIfBehind(client: Client): void {
    if (client.response.writableLength <= client.allowance) return;
    this.#dropped += 1;
    this.#options.logger.warn('dropped an event-stream client that fell behind', {
      bufferedBytes: client.response.writableLength,
      limit: this.#options.maxClientBufferBytes,
    });
    this.#remove(client);
    client.response.destroy();
  }

  #remove(client: Client): void {
    if (!this.#clients.delete(client)) return;
    client.unsubscribe();
    clearInterval(client.heartbeat);
  }
}
