/**
 * A DashboardBackend over a bare TaskService and a session directory: for hosts without a session
 * runtime, and for tests. Stops go straight to `kill` as the user; "move to background" is the task
 * service's own promotion (`requestBackground`), which the producer waiting on a foreground task honours.
 * It keeps no conversation.
 */

import {
  type BackgroundEventFeed,
  backgroundEventFeedOptions,
  createBackgroundEventFeed,
} from '../events/index.js';
import {
  type Caller,
  createTrustedCaller,
  ErrandError,
  isTerminalStatus,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';
import type {
  DashboardBackend,
  MaybePromise,
  OutputSnapshot,
  StopBackgroundWorkResult,
} from './dashboard-backend.js';
import type { SessionDirectory } from './session-directory.js';

/**
 * The options of `createTaskServiceBackend`. A key not declared here (or one of `feed` the event feed lacks)
 * is rejected with `UNKNOWN_OPTION`.
 */
const taskServiceBackendOptions = defineOptions('createTaskServiceBackend', {
  /** The task service whose background work the dashboard shows and stops. */
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['kill'])),
  /** The sessions the dashboard lists. */
  sessions: option.required(
    option.shaped<SessionDirectory>('a session directory with list() and get()', ['list', 'get']),
  ),
  /**
   * Reads a non-consuming output snapshot of a work held by `sessionId` (for example a bash process
   * handle's tail). Default: no output is available. Never use the consuming `TaskService.read`.
   */
  readOutput:
    option.func<
      (sessionId: string, workId: string, maxBytes: number) => MaybePromise<OutputSnapshot | undefined>
    >(),
  /** Options of the event feed the backend creates (its `tasks` is this backend's). */
  feed: option.nested(backgroundEventFeedOptions.omit('tasks')),
  /** The reason handed to the producer on a stop. Default "stopped from the dashboard". */
  stopReason: option.string({ nonEmpty: false, default: 'stopped from the dashboard' }),
});

/** Options of `createTaskServiceBackend`. */
export type TaskServiceBackendOptions = OptionsInput<typeof taskServiceBackendOptions.rules>;

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
  const { tasks, sessions, readOutput, stopReason } = taskServiceBackendOptions.resolve(options);
  const caller: Caller = options.feed?.caller ?? createTrustedCaller('errand-dashboard');
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
    outputSnapshot: (sessionId, workId, maxBytes) => readOutput?.(sessionId, workId, maxBytes),
    listForegroundWork: (sessionId) =>
      tasks
        .list(caller)
        .filter(
          (task) => task.ownerSessionId === sessionId && !task.isBackgrounded && task.status === 'running',
        )
        .map((task) => ({
          workId: task.id,
          sessionId,
          toolCallId: typeof task.detail.toolUseId === 'string' ? task.detail.toolUseId : null,
          taskKind: task.kind,
          label: task.label,
          startedAt: task.startedAt,
          canMoveToBackground: true,
        })),
    moveToBackground(workId) {
      const task = find(workId);
      if (task === undefined) return { ok: false, reason: 'not_found' };
      if (task.isBackgrounded || task.status !== 'running') return { ok: false, reason: 'not_running' };
      const moved = tasks.requestBackground(workId, caller);
      return moved.isBackgrounded ? { ok: true, workId } : { ok: false, reason: 'not_running' };
    },
    async openOutput(workId, position) {
      const task = find(workId);
      // Only what the dashboard shows: foreground work belongs to its call.
      if (task === undefined || !task.isBackgrounded) return undefined;
      return tasks.openCursor(task.id, caller, position);
    },
    dispose: () => events.dispose(),
  };
}
