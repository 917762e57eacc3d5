/**
 * Reads a bounded JSON request body. An oversized body is refused with a 400 that must reach the client:
 * closing a connection while the client still sends makes the kernel answer with a reset, which throws
 * the 400 away before the client reads it. So the rest of the body is read and discarded, up to
 * `maxDiscardBytes`, before the 400 (with `Connection: close`) is sent; a body that goes on past that
 * allowance gets its 400 then, and a lingering close (`lingering-close.ts`) reads what still comes for a
 * bounded time before the socket closes.
 */
import type { IncomingMessage } from 'node:http';
import { DashboardRequestError } from './http-response.js';
import { lingerOnClose } from './lingering-close.js';

export interface BodyLimits {
  /** The largest body accepted. */
  readonly maxBytes: number;
  /** Bytes of an oversized body read and discarded before its 400 is sent. */
  readonly maxDiscardBytes: number;
  /** How long a connection whose body went on past the allowance lingers after its 400. Default 2000 ms. */
  readonly lingerMs?: number;
}

const DEFAULT_LINGER_MS = 2000;

function tooLarge(maxBytes: number): DashboardRequestError {
  return new DashboardRequestError(
    400,
    'BODY_TOO_LARGE',
    `The request body exceeds ${maxBytes} bytes (maxBodyBytes)`,
    { Connection: 'close' },
  );
}

/** Reads what is left of the body and throws it away; past `allowance` bytes the connection is closed. */
function discardRest(request: IncomingMessage, allowance: number): void {
  let discarded = 0;
  request.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > allowance) request.socket.destroy();
  });
  request.on('error', () => {});
  request.resume();
}

/**
 * Reads the rest of an oversized body and throws it away, then resolves: at its end, or once `allowance`
 * bytes went by (the connection is then set to linger after its answer, reading what still comes).
 */
function discardBeforeAnswer(request: IncomingMessage, limits: BodyLimits): Promise<void> {
  return new Promise((resolve) => {
    let discarded = 0;
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      resolve();
    };
    request.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > limits.maxDiscardBytes && !answered) {
        lingerOnClose(request.socket, {
          lingerMs: limits.lingerMs ?? DEFAULT_LINGER_MS,
          maxBytes: limits.maxDiscardBytes,
        });
        answer();
      }
    });
    request.once('end', answer);
    request.once('close', answer);
    request.on('error', answer);
    request.resume();
  });
}

/** Resolves to the parsed body; rejects with a DashboardRequestError for a wrong type, size or syntax. */
export async function readJsonBody(request: IncomingMessage, limits: BodyLimits): Promise<unknown> {
  const { maxBytes, maxDiscardBytes } = limits;
  const contentType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (contentType !== 'application/json') {
    discardRest(request, maxDiscardBytes);
    throw new DashboardRequestError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'Expected a body of type application/json',
    );
  }
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await discardBeforeAnswer(request, limits);
    throw tooLarge(maxBytes);
  }
  const chunks = await new Promise<Buffer[]>((resolve, reject) => {
    const received: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) {
        received.push(chunk);
        return;
      }
      // Stop buffering but keep reading: the answer still has to reach the client.
      request.off('data', onData);
      request.off('end', onEnd);
      void discardBeforeAnswer(request, limits).then(() => reject(tooLarge(maxBytes)));
    };
    const onEnd = () => resolve(received);
    request.on('data', onData);
    request.once('end', onEnd);
    request.once('error', reject);
  });
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new DashboardRequestError(400, 'INVALID_JSON', 'The request body is not valid JSON');
  }
}
