/**
 * Reads a bounded JSON request body. An oversized body is refused with a 400 that must reach the client:
 * closing a connection while the client still sends makes the kernel answer with a reset, which throws
 * the 400 away before the client reads it. So the rest of the body is read and discarded, up to
 * `maxDiscardBytes`, and the connection stays usable; only a body beyond that allowance (declared or
 * received) has its connection closed.
 */
import type { IncomingMessage } from 'node:http';
import { DashboardRequestError } from './http-response.js';

export interface BodyLimits {
  /** The largest body accepted. */
  readonly maxBytes: number;
  /** Bytes of an oversized body read and discarded so its 400 is delivered; beyond them the connection closes. */
  readonly maxDiscardBytes: number;
}

function tooLarge(maxBytes: number, closing: boolean): DashboardRequestError {
  return new DashboardRequestError(
    400,
    'BODY_TOO_LARGE',
    `The request body exceeds ${maxBytes} bytes (maxBodyBytes)`,
    closing ? { Connection: 'close' } : {},
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
    // Too large to read even for discarding: say so and close (the client may not see the answer).
    const closing = declared > maxDiscardBytes;
    if (!closing) discardRest(request, maxDiscardBytes);
    throw tooLarge(maxBytes, closing);
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
      discardRest(request, maxDiscardBytes);
      reject(tooLarge(maxBytes, false));
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
