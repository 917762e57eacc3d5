/**
 * A DashboardBackend over a bare TaskService and a session directory: for hosts without a session
 * runtime, for `errand serve` on its own, and for tests. Stops go straight to `kill` as the user.
 */

import { BACKGROUND_EVENT_FEED_OPTION_KEYS } from '../events/feed-options.js';
import {
  type BackgroundEventFeed,
  type BackgroundEventFeedOptions,
  createBackgroundEventFeed,
} from '../events/index.js';
import {
  type Caller,
  createTrustedCaller,
  ErrandError,
  InvalidArgumentError,
  isTerminalStatus,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../tasks/option-keys.js';
import type {
  DashboardBackend,
  MaybePromise,
  OutputSnapshot,
  StopBackgroundWorkResult,
} from './dashboard-backend.js';
import type { SessionDirectory } from './session-directory.js';

/**
 * Options of `createTaskServiceBackend`. A key not listed here (or one of `feed` the event feed lacks) is
 * rejected with `UNKNOWN_OPTION`.
 */
export interface TaskServiceBackendOptions {
  /** The task service whose background work the dashboard shows and stops. */
  readonly tasks: TaskService;
  /** The sessions the dashboard lists. */
  readonly sessions: SessionDirectory;
  /**
   * Reads a non-consuming output snapshot of a work held by `sessionId` (for example a bash process
   * handle's tail). Default: no output is available. Never use the consuming `TaskService.read`.
   */
  readonly readOutput?: (
    sessionId: string,
    workId: string,
    maxBytes: number,
  ) => MaybePromise<OutputSnapshot | undefined>;
  /** Options of the event feed the backend creates (its `tasks` is this backend's). */
  readonly feed?: Omit<BackgroundEventFeedOptions, 'tasks'>;
  /** The reason handed to the producer on a stop. Default "stopped from the dashboard". */
  readonly stopReason?: string;
}

const TASK_SERVICE_BACKEND_OPTION_KEYS = optionKeys<TaskServiceBackendOptions>()({
  tasks: true,
  sessions: true,
  readOutput: true,
  feed: true,
  stopReason: true,
});

/** The feed's options but `tasks`, which is the backend's. */
const FEED_KEYS = BACKGROUND_EVENT_FEED_OPTION_KEYS.filter((key) => key !== 'tasks');

export interface TaskServiceBackend extends DashboardBackend {
  readonly events: BackgroundEventFeed;
  /** Disposes the event feed it created. The task service stays the caller's. */
  dispose(): void;
}

const STOP_ERROR_REASONS: Record<string, StopBackgroundWorkResult> = {
  TASK_NOT_FOUND: { ok: false, reason: 'not_found' },
  CANCEL_NOT_SUPPORTED: { ok: false, reason: 'cancel_not_supported' },
  TASK_NOT_RUNNING: { ok: false, reason: 'not_running' },
};

export function createTaskServiceBackend(options: TaskServiceBackendOptions): TaskServiceBackend {
  rejectUnknownOptions(options, TASK_SERVICE_BACKEND_OPTION_KEYS, { where: 'createTaskServiceBackend' });
  rejectUnknownOptions(options?.feed, FEED_KEYS, { where: 'createTaskServiceBackend', path: 'feed' });
  const { tasks, sessions } = options;
  if (typeof tasks?.kill !== 'function') throw new InvalidArgumentError('tasks', 'a TaskService', tasks);
  if (typeof sessions?.list !== 'function' || typeof sessions.get !== 'function') {
    throw new InvalidArgumentError('sessions', 'a session directory with list() and get()', sessions);
  }
  if (options.readOutput !== undefined && typeof options.readOutput !== 'function') {
    throw new InvalidArgumentError('readOutput', 'a function', options.readOutput);
  }
  const caller: Caller = options.feed?.caller ?? createTrustedCaller('errand-dashboard');
  const stopReason = options.stopReason ?? 'stopped from the dashboard';
  const events = createBackgroundEventFeed({ ...options.feed, caller, tasks });

  const find = (workId: string): TaskSnapshot | undefined => {
    try {
      return tasks.get(workId, caller);
    } catch (error) {
      if (ErrandError.hasCode(error, 'TASK_NOT_FOUND')) return undefined;
      throw error;
    }
  };

  return {
    events,
    listSessions: () => sessions.list(),
    getSession: (sessionId) => sessions.get(sessionId),
    async stopBackgroundWork(workId) {
      const task = find(workId);
      // Foreground work is not on the dashboard: it is not found there either.
      if (task === undefined || !task.isBackgrounded) return { ok: false, reason: 'not_found' };
      if (task.status !== 'running') return { ok: false, reason: 'not_running' };
      if (!task.cancellable) return { ok: false, reason: 'cancel_not_supported' };
      let after: TaskSnapshot;
      try {
        after = await tasks.kill(workId, caller, stopReason, { initiator: 'user' });
      } catch (error) {
        const rejection = ErrandError.isInstance(error) ? STOP_ERROR_REASONS[error.code] : undefined;
        if (rejection) return rejection;
        throw error;
      }
      // It ended on its own before the request reached it: nothing was cancelled.
      if (isTerminalStatus(after.status) && after.cancelRequestedAt === undefined) {
        return { ok: false, reason: 'not_running' };
      }
      return { ok: true };
    },
    outputSnapshot: (sessionId, workId, maxBytes) => options.readOutput?.(sessionId, workId, maxBytes),
    async openOutput(workId, position) {
      const task = find(workId);
      // Only what the dashboard shows: foreground work belongs to its call.
      if (task === undefined || !task.isBackgrounded) return undefined;
      return tasks.openCursor(task.id, caller, position);
    },
    dispose: () => events.dispose(),
  };
}
