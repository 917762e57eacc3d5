/**
 * Live output of a background work over HTTP: one page from an offset (`GET …/output?from=`), and a
 * stream of new output as server-sent events (`GET …/output/stream?from=`), resumable with
 * `Last-Event-ID` (each event's id is the offset after it). Both read through the backend's output
 * readers — observation cursors — so every viewer has its own position and none moves the model's read.
 * A stream holds at most one page unsent: it reads the next only once the client took the last.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ErrandError,
  type OpenCursorOptions,
  type OutputCursor,
  type OutputCursorRead,
} from '../tasks/index.js';
import type { DashboardBackend } from './dashboard-backend.js';
import { DashboardRequestError, SECURITY_HEADERS } from './http-response.js';

export interface OutputRoutesOptions {
  readonly backend: DashboardBackend;
  /** The most bytes of output one page (or one stream event) carries. */
  readonly pageMaxBytes: number;
  readonly heartbeatMs: number;
  readonly maxStreams: number;
}

/** What a page answers: the read, with the work it belongs to. */
export interface OutputPageBody extends Omit<OutputCursorRead, 'stream'> {
  readonly workId: string;
  readonly stream: OutputCursorRead['stream'];
}

/** How long a browser waits before reconnecting a dropped stream. */
const RETRY_MS = 2000;
const OFFSET = /^\d{1,15}$/;

/** Where a reader starts, from `from` / `tailBytes` (or a resumed stream's `Last-Event-ID`). */
export function parseOutputPosition(url: URL, lastEventId?: string): OpenCursorOptions {
  if (lastEventId !== undefined && lastEventId !== '') {
    if (!OFFSET.test(lastEventId)) {
      throw new DashboardRequestError(
        400,
        'INVALID_QUERY',
        `Expected \`Last-Event-ID\` to be an offset this stream sent, got ${JSON.stringify(lastEventId.slice(0, 40))}`,
      );
    }
    return { from: Number(lastEventId) };
  }
  const from = url.searchParams.get('from');
  const tail = url.searchParams.get('tailBytes');
  if (from !== null && tail !== null) {
    throw new DashboardRequestError(400, 'INVALID_QUERY', 'Give `from` or `tailBytes`, not both');
  }
  if (tail !== null) return { from: 'end', tailBytes: queryInteger('tailBytes', tail) };
  if (from === null || from === 'start') return { from: 'start' };
  if (from === 'end') return { from: 'end' };
  return { from: queryInteger('from', from) };
}

function queryInteger(name: string, value: string): number {
  if (!OFFSET.test(value)) {
    throw new DashboardRequestError(
      400,
      'INVALID_QUERY',
      `Expected \`${name}\` to be a non-negative integer, got ${JSON.stringify(value.slice(0, 40))}`,
    );
  }
  return Number(value);
}

/** The page size a request asks for (`maxBytes`), at most the server's. */
function pageBytes(url: URL, most: number): number {
  const asked = url.searchParams.get('maxBytes');
  if (asked === null) return most;
  const bytes = queryInteger('maxBytes', asked);
  if (bytes < 4 || bytes > most) {
    throw new DashboardRequestError(
      400,
      'INVALID_QUERY',
      `Expected \`maxBytes\` to be an integer from 4 to ${most} (outputPageMaxBytes), got ${bytes}`,
    );
  }
  return bytes;
}

export class OutputRoutes {
  readonly #options: OutputRoutesOptions;
  readonly #streams = new Set<{ readonly response: ServerResponse; readonly stop: AbortController }>();

  constructor(options: OutputRoutesOptions) {
    this.#options = options;
  }

  get streamCount(): number {
    return this.#streams.size;
  }

  /** `GET /api/background-works/:workId/output?from=|tailBytes=[&maxBytes=]`: one page. */
  async page(workId: string, url: URL): Promise<OutputPageBody> {
    const maxBytes = pageBytes(url, this.#options.pageMaxBytes);
    const cursor = await this.#open(workId, parseOutputPosition(url));
    try {
      const read = await cursor.read({ maxBytes });
      return { workId, ...read };
    } finally {
      cursor.close();
    }
  }

  /** `GET /api/background-works/:workId/output/stream?from=|tailBytes=`: server-sent events. */
  async stream(workId: string, request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    if (this.#streams.size >= this.#options.maxStreams) {
      throw new DashboardRequestError(503, 'TOO_MANY_OUTPUT_STREAMS', 'Too many output streams are open', {
        'Retry-After': '5',
      });
    }
    const header = request.headers['last-event-id'];
    const lastEventId = typeof header === 'string' ? header : undefined;
    const resumed = lastEventId !== undefined && lastEventId !== '';
    const cursor = await this.#open(workId, parseOutputPosition(url, lastEventId));
    const entry = { response, stop: new AbortController() };
    this.#streams.add(entry);
    const finish = () => {
      if (!this.#streams.delete(entry)) return;
      entry.stop.abort();
      cursor.close();
    };
    response.on('close', finish);
    try {
      const first = await cursor.read({ maxBytes: this.#options.pageMaxBytes });
      if (resumed && first.ended && first.text === '') {
        // A reconnect after the end: nothing more will come, and 204 tells the browser not to retry.
        response.writeHead(204, SECURITY_HEADERS);
        response.end();
        return;
      }
      response.writeHead(200, {
        ...SECURITY_HEADERS,
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      response.socket?.setNoDelay(true);
      response.write(`retry: ${RETRY_MS}\n\n`);
      await this.#follow(cursor, first, entry.stop.signal, response);
    } finally {
      finish();
      if (!response.writableEnded && !response.destroyed) response.end();
    }
  }

  /** Ends every stream (the server is closing). */
  closeAll(): void {
    for (const entry of [...this.#streams]) {
      entry.stop.abort();
      entry.response.end();
    }
  }

  async #follow(
    cursor: OutputCursor,
    first: OutputCursorRead,
    signal: AbortSignal,
    response: ServerResponse,
  ): Promise<void> {
    let read = first;
    for (;;) {
      if (signal.aborted) return;
      if (read.text !== '' || read.missedBytes > 0) {
        const data = {
          text: read.text,
          from: read.from,
          next: read.next,
          missedBytes: read.missedBytes,
          end: read.end,
        };
        const written = response.write(`id: ${read.next}\nevent: output\ndata: ${JSON.stringify(data)}\n\n`);
        if (!written) await drained(response, signal);
      } else if (read === first || !read.ended) {
        response.write(': heartbeat\n\n');
      }
      if (read.ended) {
        response.write(`event: end\ndata: ${JSON.stringify({ next: read.next, status: read.status })}\n\n`);
        return;
      }
      if (signal.aborted) return;
      try {
        read = await cursor.read({
          maxBytes: this.#options.pageMaxBytes,
          waitMs: this.#options.heartbeatMs,
          signal,
        });
      } catch (error) {
        // The work was forgotten (or the runtime is going away): the stream ends with it.
        if (ErrandError.hasCode(error, 'CURSOR_CLOSED')) return;
        throw error;
      }
    }
  }

  async #open(workId: string, position: OpenCursorOptions): Promise<OutputCursor> {
    const { backend } = this.#options;
    if (backend.events.find(workId) === undefined) {
      throw new DashboardRequestError(
        404,
        'WORK_NOT_FOUND',
        `No background work with id ${JSON.stringify(workId)}`,
      );
    }
    let cursor: OutputCursor | undefined;
    try {
      cursor = await backend.openOutput?.(workId, position);
    } catch (error) {
      if (ErrandError.hasCode(error, 'INVALID_ARGUMENT')) {
        throw new DashboardRequestError(400, 'INVALID_QUERY', (error as Error).message);
      }
      if (ErrandError.hasCode(error, 'CURSOR_LIMIT')) {
        throw new DashboardRequestError(503, 'TOO_MANY_OUTPUT_READERS', (error as Error).message, {
          'Retry-After': '5',
        });
      }
      if (ErrandError.hasCode(error, 'TASK_NOT_FOUND')) cursor = undefined;
      else throw error;
    }
    if (cursor === undefined) {
      throw new DashboardRequestError(
        404,
        'OUTPUT_UNAVAILABLE',
        `No live reader holds the output of ${JSON.stringify(workId)}`,
      );
    }
    return cursor;
  }
}

/** Resolves once the response took what it holds (or the stream stopped). */
function drained(response: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off('drain', done);
      response.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    response.once('drain', done);
    response.once('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
}
