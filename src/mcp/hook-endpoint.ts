/**
 * The MCP server's side of client hooks: a Unix socket (0600, in a 0700 directory) on which `errand hook`
 * processes of the same client ask for the session's queued `<task-notification>`s. The server owns the
 * inbox; a hook only borrows from it, under a lease, through the same reservation every surface uses
 * (`session.inbox.reserve`): the notifications are reserved when the hook asks, committed (recorded as
 * delivered, once) when the hook says it printed them, and released to the head of the queue when the
 * hook says it did not, its connection closes first, or the lease runs out.
 *
 * At the end of a turn (`stop`) one answer carries every queued ending, after a short gathering window
 * for endings about to land, and may first hold while background work runs (`hold`: the first ending,
 * or — a headless run — every one, up to the hook's bound; past it the answer names what will be
 * stopped). Blocks in a row are counted (`StopChain`) so none is asked for past the client's cap; the
 * last allowed one names everything still queued or running; a block's commit waits for the client's
 * next hook to show it reached the model. A `wake` (Claude Code's background end-of-turn hook) waits,
 * once no end-of-turn hook is at work, for the session's next ending.
 *
 * Compaction: a `compact` take marks the session's task digest due (the client is about to summarise the
 * conversation, and the model to forget its tasks); a `context` take, and every `tool` or `prompt` take
 * while it is due, carries the digest; a commit of one that carried it clears it.
 */
import { chmodSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import {
  encodeLine,
  HOOK_PROTOCOL_VERSION,
  type HookNotification,
  LineReader,
  parseTakeRequest,
  type RunningNotice,
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
import {
  type HookEndpointOptions,
  hookEndpointOptions,
  type ResolvedHookEndpointOptions,
} from './hook-endpoint-options.js';
import { checkHookPeer, type HookPeerPolicy } from './hook-peer-check.js';
import { StopChain } from './stop-chain.js';

/** The `source` of the conversation message that records a delivery through a client hook. */
export const CLIENT_HOOK_SOURCE = 'client_hook';

export interface HookEndpointDependencies {
  readonly session: Pick<Session, 'inbox' | 'owner' | 'on' | 'taskDigest'>;
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
  /** End-of-turn blocks printed in a row in the current turn. */
  readonly blocksInRow: number;
  /** Stops listening and ends every connection; what they held goes back to the queue. Idempotent. */
  close(): Promise<void>;
}

/** A hook's pending answer: its reservation and what it tells of running work, until it settles. */
interface Loan {
  readonly moment: TakeRequest['moment'];
  reservation: NotificationReservation | undefined;
  told: readonly string[];
  /** The answer carried the task digest: a commit clears it. */
  digest: boolean;
  cancelLease: () => void;
}

/** Whether an end-of-turn or wake take keeps waiting while untold work runs. */
function holds(request: TakeRequest, queued: boolean): boolean {
  if (request.moment === 'wake') return !queued;
  if (request.hold === 'all') return true;
  return request.hold === 'first' && !queued;
}

export async function startHookEndpoint(
  dependencies: HookEndpointDependencies,
  options: HookEndpointOptions = {},
): Promise<HookEndpoint> {
  const resolved = hookEndpointOptions.resolve(options);
  const { session, tasks, logger } = dependencies;
  const clock = dependencies.clock ?? systemClock;
  const sockets = new Set<Socket>();
  /** Running tasks the model was told of at the end of a turn (they no longer hold a turn). */
  const told = new Set<string>();
  /** Tasks on an answer a hook holds and has not settled yet. */
  const tellingNow = new Set<string>();
  /** Wakes waiting requests: something was queued, something ended, an end-of-turn hook settled. */
  const waiters = new Set<() => void>();
  /** Tasks that ended and whose notification was neither queued nor discarded yet, with when they ended. */
  const pendingEnds = new Map<string, number>();
  /** End-of-turn takes answering or lent: a wake leaves the queue to them meanwhile. */
  let stopsAtWork = 0;
  /** The one wake waiting now: a newer one answers it empty. */
  let waitingWake: (() => void) | undefined;
  let closed = false;
  /** A compaction happened and the model has not been handed the task digest since. */
  let digestDue = false;
  const chain = new StopChain({
    told: (ids) => {
      for (const id of ids) told.add(id);
    },
    commitFailed: (error) =>
      logger.warn('recording the delivery of an end-of-turn hand-over failed; it stays queued', {
        error: error instanceof Error ? error.message : String(error),
      }),
  });

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
      told.delete(snapshot.id);
      wakeAll();
    },
    { owner: session.owner },
  );

  const runningWork = (): RunningTask[] =>
    tasks
      .list(session.owner)
      .filter((task) => task.isBackgrounded && !isTerminalStatus(task.status))
      .map((task) => ({ id: task.id, label: task.label }));

  /** Reserves every queued notification (up to `maxNotificationsPerHook`): the hook fits them in its budget. */
  const reserve = (): NotificationReservation | undefined => {
    if (session.inbox.queuedNotifications().length === 0) return undefined;
    const reservation = session.inbox.reserve({
      source: CLIENT_HOOK_SOURCE,
      limit: resolved.maxNotificationsPerHook,
    });
    if (reservation.notifications.length === 0) {
      reservation.release();
      return undefined;
    }
    return reservation;
  };

  const answerOf = (
    reservation: NotificationReservation | undefined,
    stillRunning: readonly RunningTask[],
    notice: RunningNotice | undefined,
    digest: string | undefined,
  ): TakeAnswer => ({
    version: HOOK_PROTOCOL_VERSION,
    notifications: (reservation?.notifications ?? []).map(
      (notification): HookNotification => ({
        taskId: notification.taskId,
        label: notification.label,
        text: notification.text,
      }),
    ),
    more: session.inbox.queued,
    stillRunning,
    ...(notice === undefined || stillRunning.length === 0 ? {} : { notice }),
    leaseMs: resolved.leaseMs,
    ...(digest === undefined ? {} : { digest }),
  });

  /** The digest for a `context` take, or a `tool` / `prompt` one while it is due. */
  const digestFor = (moment: TakeRequest['moment'], maxBytes: number): string | undefined => {
    if (moment !== 'context' && !(digestDue && (moment === 'tool' || moment === 'prompt'))) return undefined;
    try {
      return session.taskDigest({ maxBytes: Math.max(256, Math.min(maxBytes, resolved.maxDigestBytes)) })
        .text;
    } catch (error) {
      logger.warn('building the task digest for a client hook failed', {
        error: error instanceof Error ? error.message : String(error),
      });
      return undefined;
    }
  };

  /** The latest moment an ended task's notification may still arrive (the policy reads the tail first). */
  const graceEndOf = (now: number): number => {
    let graceEnd = Number.NEGATIVE_INFINITY;
    for (const [taskId, endedAt] of pendingEnds) {
      if (now >= endedAt + resolved.endGraceMs) pendingEnds.delete(taskId);
      else graceEnd = Math.max(graceEnd, endedAt + resolved.endGraceMs);
    }
    return graceEnd;
  };

  /**
   * Answers a `take`: at once for a tool result or a prompt; at the end of a turn after the gathering
   * window and the hold; a wake once an ending is queued.
   */
  const take = (request: TakeRequest, signal: AbortSignal): Promise<Loan & { answer: TakeAnswer }> =>
    new Promise((resolve) => {
      chain.observe(request);
      const arrivedAt = clock.now();
      const deadline =
        arrivedAt + (request.moment === 'stop' || request.moment === 'wake' ? request.waitMs : 0);
      const allowed = StopChain.allowedBlocks(request.blockCap);
      /** The last block the client allows in a row: it tells everything. */
      const final = request.moment === 'stop' && chain.blocks === allowed - 1;
      /** Set once something is queued: the answer waits for endings about to land until then. */
      let gatherUntil: number | undefined;
      let cancelTimer: (() => void) | undefined;
      let finished = false;
      const finish = (
        reservation: NotificationReservation | undefined,
        stillRunning: readonly RunningTask[] = [],
        notice?: RunningNotice,
      ) => {
        if (finished) {
          reservation?.release();
          return;
        }
        finished = true;
        waiters.delete(evaluate);
        cancelTimer?.();
        signal.removeEventListener('abort', abort);
        if (waitingWake === supersede) waitingWake = undefined;
        for (const task of stillRunning) tellingNow.add(task.id);
        const digest = closed ? undefined : digestFor(request.moment, request.maxBytes);
        resolve({
          moment: request.moment,
          reservation,
          told: stillRunning.map((task) => task.id),
          digest: digest !== undefined,
          cancelLease: () => {},
          answer: answerOf(reservation, stillRunning, notice, digest),
        });
      };
      const abort = () => finish(undefined);
      const supersede = () => finish(undefined);
      const waitUntil = (until: number, now: number) => {
        waiters.add(evaluate);
        cancelTimer?.();
        cancelTimer = clock.schedule(Math.max(0, until - now), evaluate);
      };
      const reserveOrFail = (): NotificationReservation | undefined | 'failed' => {
        try {
          return reserve();
        } catch (error) {
          logger.warn('reserving notifications for a client hook failed; they stay queued', {
            error: error instanceof Error ? error.message : String(error),
          });
          return 'failed';
        }
      };
      const evaluate = () => {
        if (finished) return;
        if (closed || signal.aborted) {
          finish(undefined);
          return;
        }
        if (request.moment === 'compact' || request.moment === 'context') {
          // The conversation is being compacted: the next hook that reaches the model hands it the digest.
          if (request.moment === 'compact') digestDue = true;
          finish(undefined);
          return;
        }
        if (request.moment === 'tool' || request.moment === 'prompt') {
          const reservation = reserveOrFail();
          finish(reservation === 'failed' ? undefined : reservation);
          return;
        }
        const now = clock.now();
        if (request.moment === 'stop' && chain.blocks >= allowed) {
          // The client would override this block and discard it: the turn ends; the queue waits.
          finish(undefined);
          return;
        }
        // A wake leaves the queue to an end-of-turn hook at work, and to the model continuing with a block.
        if (request.moment === 'wake' && (stopsAtWork > 0 || chain.tentative !== undefined)) {
          waitUntil(deadline, now);
          return;
        }
        const running = runningWork();
        const untold = running.filter((task) => !told.has(task.id) && !tellingNow.has(task.id));
        const graceEnd = graceEndOf(now);
        const queued = session.inbox.queuedNotifications().length > 0;
        // A wake waits on all of it; an end-of-turn hold only on work the model was not told of.
        const waitingOn = request.moment === 'wake' ? running : untold;
        if (now < deadline && waitingOn.length > 0 && holds(request, queued)) {
          waitUntil(deadline, now);
          return;
        }
        // An ending whose notification is on its way goes into the same hand-over.
        if (now < graceEnd) {
          waitUntil(graceEnd, now);
          return;
        }
        if (request.moment === 'wake' && !queued) {
          finish(undefined);
          return;
        }
        // The gathering window: endings about to land go into the same hand-over.
        if (queued) gatherUntil ??= now + resolved.gatherMs;
        const windowEnd = gatherUntil ?? arrivedAt + resolved.gatherMs;
        if (running.length > 0 && now < windowEnd) {
          waitUntil(windowEnd, now);
          return;
        }
        const reservation = reserveOrFail();
        if (reservation === 'failed') {
          finish(undefined);
          return;
        }
        if (request.moment === 'wake') {
          finish(reservation);
          return;
        }
        if (final) {
          // The last block in a row: everything still running is named, told before or not.
          finish(reservation, running, 'final');
          return;
        }
        if (untold.length > 0 && now >= deadline && request.hold !== 'none') {
          finish(reservation, untold, request.hold === 'all' ? 'expired' : 'reminder');
          return;
        }
        finish(reservation);
      };
      if (request.moment === 'wake') {
        waitingWake?.();
        waitingWake = supersede;
      }
      if (request.moment === 'stop') stopsAtWork += 1;
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
      for (const id of current.told) tellingNow.delete(id);
      if (current.digest && how === 'commit') digestDue = false;
      if (current.moment === 'stop') {
        stopsAtWork -= 1;
        // Printed: tentative until the client's next hook shows the model got it (`StopChain`).
        const printed = how === 'commit' && (current.reservation !== undefined || current.told.length > 0);
        if (printed) chain.printed({ reservation: current.reservation, told: current.told });
        else current.reservation?.release();
        wakeAll();
        return true;
      }
      for (const id of current.told) if (how === 'commit') told.add(id);
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
          const request = parseTakeRequest(message, {
            maxWaitMs: resolved.maxStopWaitMs,
            maxWakeWaitMs: resolved.maxWakeWaitMs,
          });
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
    get blocksInRow() {
      return chain.blocks;
    },
    close() {
      closing ??= (async () => {
        closed = true;
        chain.close();
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
