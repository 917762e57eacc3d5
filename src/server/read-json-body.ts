/** Reads a bounded JSON request body. */
import type { IncomingMessage } from 'node:http';
import { DashboardRequestError } from './http-response.js';

function tooLarge(maxBytes: number): DashboardRequestError {
  return new DashboardRequestError(400, 'BODY_TOO_LARGE', `The request body exceeds ${maxBytes} bytes`, {
    Connection: 'close',
  });
}

/** Resolves to the parsed body; rejects with a DashboardRequestError for a wrong type, size or syntax. */
export async function readJsonBody(request: IncomingMessage, maxBytes: number): Promise<unknown> {
  const contentType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (contentType !== 'application/json') {
    throw new DashboardRequestError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'Expected a body of type application/json',
    );
  }
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const chunks = await new Promise<Buffer[]>((resolve, reject) => {
    const received: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) {
        received.push(chunk);
        return;
      }
      // Stop buffering but keep the socket: the answer still has to reach the client.
      request.off('data', onData);
      request.off('end', onEnd);
      request.resume();
      reject(tooLarge(maxBytes));
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
