/**
 * A lingering close for a connection whose request body was not read to its end: after the answer, only
 * the sending side is shut (FIN), and what the client still sends is read and thrown away, for at most
 * `lingerMs` and `maxBytes`, before the socket is closed. Closing with unread bytes makes the kernel answer
 * with a reset, and a reset throws away the answer the client has not read yet.
 */
import type { Socket } from 'node:net';

export interface LingerLimits {
  /** The longest the connection lingers after the answer. */
  readonly lingerMs: number;
  /** The most bytes read and discarded while it lingers. */
  readonly maxBytes: number;
}

const lingering = new WeakSet<Socket>();

/**
 * Makes the server's close of `socket` (Node's HTTP server calls `destroySoon` once a `Connection: close`
 * answer is written) a lingering one. Idempotent.
 */
export function lingerOnClose(socket: Socket, limits: LingerLimits): void {
  if (lingering.has(socket)) return;
  lingering.add(socket);
  socket.destroySoon = () => {
    let discarded = 0;
    const close = () => {
      clearTimeout(timer);
      socket.destroy();
    };
    const timer = setTimeout(close, limits.lingerMs);
    timer.unref();
    socket.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > limits.maxBytes) close();
    });
    socket.once('end', close);
    socket.on('error', close);
    socket.end();
    socket.resume();
  };
}
