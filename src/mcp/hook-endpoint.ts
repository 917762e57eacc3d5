/**
 * The MCP server's side of client hooks: a Unix socket (0600, in a 0700 directory) on which `errand hook`
 * processes of the same client ask for the session's queued `<task-notification>`s. The server owns the
 * inbox; a hook only borrows from it, under a lease, through the same reservation every surface uses
 * (`session.inbox.reserve`): the notifications are reserved when the hook asks, committed (recorded as
 * delivered, once) when the hook says it printed them, and released to the head of the queue when the
 * hook says it did not, its connection closes first, or the lease runs out.
 *
 * At the end of a turn (`stop`) the endpoint also holds the answer while the session's background work is
 * still running, up to the wait the hook asked for (capped by `maxStopWaitMs`): an ending queued meanwhile
 * is answered at once. If nothing ended, the answer names the work still running that the model was not
 * reminded of yet — reminded once per task, so a run is kept going a bounded number of times.
 */
import { chmodSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import {
  encodeLine,
  HOOK_PROTOCOL_VERSION,
  type HookNotification,
  LineReader,
  parseTakeRequest,
  type RunningTask,
  type TakeAnswer,
  type TakeRequest,
} from '../hooks/index.js';
import type { NotificationReservation, Session } from '../session/index.js';
import {
  type Clock,
  type Disposer,
  isTerminalStatus,
  type Logger,
  systemClock,
  type TaskService,
} from '../tasks/index.js';
import { utf8ByteLength } from '../text/index.js';
import {
  type HookEndpointOptions,
  hookEndpointOptions,
  type ResolvedHookEndpointOptions,
} from './hook-endpoint-options.js';
import { checkHookPeer, type HookPeerPolicy } from './hook-peer-check.js';

/** The `source` of the conversation message that records a delivery through a client hook. */
export const CLIENT_HOOK_SOURCE = 'client_hook';

export interface HookEndpointDependencies {
  readonly session: Pick<Session, 'inbox' | 'owner' | 'on'>;
  readonly tasks: Pick<TaskService, 'list' | 'onTaskDone'>;
  /** Where to listen. */
  readonly socketPath: string;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** The registered client: with `authenticatePeers`, only its processes are served. Default: unknown. */
  readonly client?: HookPeerPolicy['client'];
}

export interface HookEndpoint {
  readonly socketPath: string;
  readonly options: ResolvedHookEndpointOptions;
  /** Hook connections open now. */
  readonly connections: number;
  /** Stops listening and ends every connection; what they held goes back to the queue. Idempotent. */
  close(): Promise<void>;
}

/** A hook's pending answer: its reservation and reminder, until it commits or releases them. */
interface Loan {
  reservation: NotificationReservation | undefined;
  reminded: readonly string[];
  cancelLease: () => void;
}

export async function startHookEndpoint(
  dependencies: HookEndpointDependencies,
  options: HookEndpointOptions = {},
): Promise<HookEndpoint> {
  const resolved = hookEndpointOptions.resolve(options);
  const { session, tasks, logger } = dependencies;
  const clock = dependencies.clock ?? systemClock;
  const sockets = new Set<Socket>();
  /** Running tasks the model was reminded of at the end of a turn (committed reminders). */
  const reminded = new Set<string>();
  /** Tasks on a reminder a hook holds and has not committed yet. */
  const remindingNow = new Set<string>();
  /** Wakes waiting end-of-turn requests: something was queued or something ended. */
  const waiters = new Set<() => void>();
  /** Tasks that ended and whose notification was neither queued nor discarded yet, with when they ended. */
  const pendingEnds = new Map<string, number>();
  let closed = false;

  const wakeAll = () => {
    for (const wake of [...waiters]) wake();
  };
  const stopSessionEvents = session.on((event) => {
    if (event.type !== 'notification-queued' && event.type !== 'notification-discarded') return;
    pendingEnds.delete(event.taskId);
    wakeAll();
  });
  const stopTaskEvents: Disposer = tasks.onTaskDone(
    (snapshot) => {
      pendingEnds.set(snapshot.id, clock.now());
      reminded.delete(snapshot.id);
      wakeAll();
    },
    { owner: session.owner },
  );

  const runningWork = (): RunningTask[] =>
    tasks
      .list(session.owner)
      .filter((task) => task.isBackgrounded && !isTerminalStatus(task.status))
      .map((task) => ({ id: task.id, label: task.label }));

  /** Reserves what fits in `maxBytes` (at least one notification). */
  const reserve = (maxBytes: number): NotificationReservation | undefined => {
    const queued = session.inbox.queuedNotifications();
    if (queued.length === 0) return undefined;
    let count = 0;
    let bytes = 0;
    for (const notification of queued.slice(0, resolved.maxNotificationsPerHook)) {
      const size = utf8ByteLength(notification.text) + 2;
      if (count > 0 && bytes + size > maxBytes) break;
      bytes += size;
      count += 1;
    }
    const reservation = session.inbox.reserve({ source: CLIENT_HOOK_SOURCE, limit: count });
    if (reservation.notifications.length === 0) {
      reservation.release();
      return undefined;
    }
    return reservation;
  };

  const answerOf = (
    reservation: NotificationReservation | undefined,
    stillRunning: readonly RunningTask[],
  ): TakeAnswer => ({
    version: HOOK_PROTOCOL_VERSION,
    notifications: (reservation?.notifications ?? []).map(
      (notification): HookNotification => ({ taskId: notification.taskId, text: notification.text }),
    ),
    more: session.inbox.queued,
    stillRunning,
    leaseMs: resolved.leaseMs,
  });

  /** Answers a `take`: at once for a tool result or a prompt; at the end of a turn, after the wait. */
  const take = (request: TakeRequest, signal: AbortSignal): Promise<Loan & { answer: TakeAnswer }> =>
    new Promise((resolve) => {
      const deadline = clock.now() + (request.moment === 'stop' ? request.waitMs : 0);
      let cancelTimer: (() => void) | undefined;
      let finished = false;
      const finish = (reservation: NotificationReservation | undefined, stillRunning: RunningTask[]) => {
        if (finished) {
          reservation?.release();
          return;
        }
        finished = true;
        waiters.delete(evaluate);
        cancelTimer?.();
        signal.removeEventListener('abort', abort);
        for (const task of stillRunning) remindingNow.add(task.id);
        resolve({
          reservation,
          reminded: stillRunning.map((task) => task.id),
          cancelLease: () => {},
          answer: answerOf(reservation, stillRunning),
        });
      };
      const abort = () => finish(undefined, []);
      const evaluate = () => {
        if (finished) return;
        if (closed || signal.aborted) {
          finish(undefined, []);
          return;
        }
        let reservation: NotificationReservation | undefined;
        try {
          reservation = reserve(request.maxBytes);
        } catch (error) {
          logger.warn('reserving notifications for a client hook failed; they stay queued', {
            error: error instanceof Error ? error.message : String(error),
          });
          finish(undefined, []);
          return;
        }
        if (reservation !== undefined || request.moment !== 'stop') {
          finish(reservation, []);
          return;
        }
        const running = runningWork();
        const now = clock.now();
        // An ending whose notification may still be on its way (the policy reads the output tail first).
        let graceEnd = Number.NEGATIVE_INFINITY;
        for (const [taskId, endedAt] of pendingEnds) {
          if (now >= endedAt + resolved.endGraceMs) pendingEnds.delete(taskId);
          else graceEnd = Math.max(graceEnd, endedAt + resolved.endGraceMs);
        }
        if (now < deadline && (running.length > 0 || now < graceEnd)) {
          waiters.add(evaluate);
          cancelTimer?.();
          const until = running.length > 0 ? deadline : Math.min(deadline, graceEnd);
          cancelTimer = clock.schedule(Math.max(0, until - now), evaluate);
          return;
        }
        finish(
          undefined,
          running.filter((task) => !reminded.has(task.id) && !remindingNow.has(task.id)),
        );
      };
      signal.addEventListener('abort', abort, { once: true });
      evaluate();
    });

  const serve = (socket: Socket): void => {
    const lines = new LineReader();
    const disconnected = new AbortController();
    let loan: Loan | undefined;
    let phase: 'request' | 'taking' | 'lent' | 'done' = 'request';

    const settle = (how: 'commit' | 'release'): boolean => {
      const current = loan;
      loan = undefined;
      if (current === undefined) return true;
      current.cancelLease();
      for (const id of current.reminded) {
        remindingNow.delete(id);
        if (how === 'commit') reminded.add(id);
      }
      if (current.reservation === undefined) return true;
      if (how === 'release') {
        current.reservation.release();
        return true;
      }
      try {
        current.reservation.commit();
        return true;
      } catch (error) {
        // Not recorded: back to the queue. The hook already printed them: the model may see them twice.
        current.reservation.release();
        logger.warn('recording the delivery of notifications a client hook printed failed', {
          error: error instanceof Error ? error.message : String(error),
        });
        return false;
      }
    };
    const end = () => {
      if (phase === 'done') return;
      phase = 'done';
      disconnected.abort();
      settle('release');
      socket.destroy();
    };

    socket.on('close', () => {
      sockets.delete(socket);
      end();
    });
    socket.on('error', () => end());
    socket.on('data', (chunk: Buffer) => {
      let received: string[];
      try {
        received = lines.push(chunk);
      } catch {
        end();
        return;
      }
      for (const line of received) {
        let message: unknown;
        try {
          message = JSON.parse(line);
        } catch {
          end();
          return;
        }
        if (phase === 'request') {
          const request = parseTakeRequest(message, { maxWaitMs: resolved.maxStopWaitMs });
          if (request === undefined) {
            end();
            return;
          }
          phase = 'taking';
          void take(request, disconnected.signal).then((taken) => {
            if (phase !== 'taking') {
              loan = taken;
              settle('release');
              return;
            }
            loan = taken;
            phase = 'lent';
            taken.cancelLease = clock.schedule(resolved.leaseMs, () => {
              logger.warn('a client hook did not confirm its notifications in time; they stay queued', {
                taskIds: taken.answer.notifications.map((notification) => notification.taskId),
              });
              end();
            });
            socket.write(encodeLine(taken.answer));
          });
          continue;
        }
        const op = (message as { op?: unknown } | null)?.op;
        if (phase !== 'lent' || (op !== 'commit' && op !== 'release')) {
          end();
          return;
        }
        const ok = settle(op);
        phase = 'done';
        socket.end(encodeLine({ ok }));
      }
    });
  };

  const server: Server = createServer((socket) => {
    if (closed || sockets.size >= resolved.maxConnections) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    if (!resolved.authenticatePeers) {
      serve(socket);
      return;
    }
    // Nothing is read until the peer passed: what it sent meanwhile waits in the socket.
    socket.pause();
    socket.once('close', () => sockets.delete(socket));
    void checkHookPeer(socket, { client: dependencies.client }).then((refusal) => {
      if (closed || socket.destroyed) return;
      if (refusal !== undefined) {
        logger.warn('a connection to the client hook socket was refused', { reason: refusal });
        socket.destroy();
        return;
      }
      serve(socket);
      socket.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(dependencies.socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  try {
    chmodSync(dependencies.socketPath, 0o600);
  } catch (error) {
    server.close();
    throw error;
  }
  server.on('error', (error) => logger.warn('the client hook socket failed', { error: error.message }));

  let closing: Promise<void> | undefined;
  return {
    socketPath: dependencies.socketPath,
    options: resolved,
    get connections() {
      return sockets.size;
    },
    close() {
      closing ??= (async () => {
        closed = true;
        stopSessionEvents();
        stopTaskEvents();
        wakeAll();
        for (const socket of [...sockets]) socket.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      })();
      return closing;
    },
  };
}
