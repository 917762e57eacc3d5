/**
 * A real HTTP receiver for webhook tests and benchmarks: records every request (headers and raw body) and
 * answers as told — a status per attempt, or never (a receiver that accepts and then hangs).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  /** The status answered, or null when it never answered. */
  readonly status: number | null;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  close(): Promise<void>;
}

/** `answer(request, attemptOfThisNotice)`: a status, or `'hang'` to never answer. */
export type Answer = (body: string, attempt: number) => number | 'hang';

export async function startWebhookReceiver(answer: Answer = () => 204, port = 0): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  const attempts = new Map<string, number>();
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(request.headers['errand-notice-id'] ?? '');
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      const status = answer(body, attempt);
      requests.push({ headers: request.headers, body, status: status === 'hang' ? null : status });
      if (status === 'hang') {
        hanging.add(response);
        return;
      }
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hooks/errand?channel=ops`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of hanging) response.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
