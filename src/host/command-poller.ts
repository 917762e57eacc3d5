/**
 * Answers a person's commands addressed to this runtime through the store (a dashboard in another
 * process stops a background work this runtime holds, or moves a foreground command of it to the
 * background): every `intervalMs` it reads its pending commands
 * — one indexed SELECT when there are none — runs each and answers it once. No network listener: the
 * store is the only channel. The timer is unref'd and stops with `stop()`.
 */
import type { DashboardBackend, MoveToBackgroundResult, StopBackgroundWorkResult } from '../server/index.js';
import type { CommandAnswer, RuntimeCommand, SessionStore } from '../store/index.js';
import type { Logger } from '../tasks/index.js';

/** Pending commands handled per tick; the rest wait for the next one. */
export const COMMANDS_PER_POLL = 16;

export interface CommandPollerOptions {
  readonly store: SessionStore;
  /** The runtime instance the commands are addressed to (the holder id of this runtime's sessions). */
  readonly runtime: string;
  readonly intervalMs: number;
  /** A command older than this when read is expired, not run: whoever asked has given up long ago. */
  readonly maxAgeMs: number;
  /** Whether the session is open in this runtime. */
  readonly holdsSession: (sessionId: string) => boolean;
  /** The session that owns the task, or undefined when this runtime does not know it. */
  readonly ownerOf: (workId: string) => string | undefined;
  /** The person's stop (initiator `user`). */
  readonly stop: DashboardBackend['stopBackgroundWork'];
  /** The person's "move to background" of a running foreground command or subagent. */
  readonly moveToBackground: (workId: string) => MoveToBackgroundResult | Promise<MoveToBackgroundResult>;
  readonly now: () => number;
  readonly logger: Logger;
}

export interface CommandPoller {
  /** One round now (what the timer runs); resolves when its commands are answered. */
  poll(): Promise<void>;
  /** Stops the timer. Idempotent; a round in progress finishes. */
  stop(): void;
}

export function startCommandPoller(options: CommandPollerOptions): CommandPoller {
  let busy: Promise<void> | undefined;
  let failing = false;
  let stopped = false;

  const answer = (command: RuntimeCommand, result: CommandAnswer) => {
    options.store.answerCommand(command.id, result);
  };

  const run = async (command: RuntimeCommand): Promise<void> => {
    if (options.now() - command.createdAt > options.maxAgeMs) {
      answer(command, { state: 'expired' });
      return;
    }
    if (!options.holdsSession(command.sessionId) || options.ownerOf(command.workId) !== command.sessionId) {
      answer(command, { state: 'rejected', reason: 'not_found' });
      return;
    }
    const moving = command.type === 'move_to_background';
    let result: StopBackgroundWorkResult | MoveToBackgroundResult;
    try {
      result = moving ? await options.moveToBackground(command.workId) : await options.stop(command.workId);
    } catch (error) {
      const what = moving ? `moving ${command.workId} to the background` : `stopping ${command.workId}`;
      options.logger.warn(`command ${command.id}: ${what} failed`, {
        error: error instanceof Error ? error.message : String(error),
      });
      answer(command, { state: 'rejected', reason: moving ? 'move_failed' : 'stop_failed' });
      return;
    }
    if (result.ok) answer(command, { state: 'acknowledged' });
    else answer(command, { state: 'rejected', reason: normalizeReason(String(result.reason)) });
  };

  const round = async (): Promise<void> => {
    try {
      const pending = options.store.listPendingCommands(options.runtime, COMMANDS_PER_POLL);
      for (const command of pending) {
        if (stopped) return;
        await run(command);
      }
      failing = false;
    } catch (error) {
      // Once per failure streak: a locked or closed store would otherwise warn every tick.
      if (!failing && !stopped) {
        options.logger.warn('reading or answering commands from the store failed', {
          error: error instanceof Error ? error.message : String(error),
        });
      }
      failing = true;
    }
  };

  const poll = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    busy ??= round().finally(() => {
      busy = undefined;
    });
    return busy;
  };

  const timer = setInterval(() => {
    void poll();
  }, options.intervalMs);
  timer.unref?.();

  return {
    poll,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}

function normalizeReason(reason: string): string {
  return reason.startsWith('background_task_') ? reason.slice('background_task_'.length) : reason;
}
