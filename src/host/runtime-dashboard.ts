/**
 * The dashboard backend of an assembled runtime (`runtime.dashboard`): every session of its store with
 * what a person recognises it by, its own sessions marked (the page selects them first) and other
 * processes' running work counted; its own background work live from its event feed, Stop through the
 * stop dispatch as the user, each session's stored conversation, and its running foreground commands and
 * subagents, which a person can move to the background as the terminal's Ctrl-B does.
 */
import type { BackgroundEventFeed } from '../events/index.js';
import type { BashTool } from '../producers/bash/bash-tool.js';
import type { AgentTool } from '../producers/subagent/index.js';
import {
  createSessionSummaries,
  type DashboardBackend,
  type ForegroundWork,
  type MoveToBackgroundResult,
  pageFromStore,
} from '../server/index.js';
import type { SessionRuntime } from '../session/index.js';
import { isHolderLive } from '../session/session-holder.js';
import type { SessionStore } from '../store/index.js';
import {
  createTrustedCaller,
  ErrandError,
  isTerminalStatus,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import type { StopDispatch } from '../tools/index.js';

const trusted = createTrustedCaller('errand-dashboard');

export interface RuntimeDashboardParts {
  readonly store: SessionStore;
  readonly tasks: TaskService;
  readonly sessions: SessionRuntime;
  readonly events: BackgroundEventFeed;
  readonly stop: StopDispatch;
  readonly bashTool: BashTool;
  readonly agentTool: AgentTool | undefined;
  /** The newest output of a bash or pty task, never consumed. */
  readonly outputSnapshot: (
    taskId: string,
    maxBytes: number,
  ) => { text: string; totalBytes?: number } | undefined;
}

/** A promotable foreground call: the tool that waits on it and can move it on. */
interface ForegroundEntry {
  readonly toolCallId: string;
  readonly taskId: string;
  readonly tool: Pick<BashTool, 'promote'>;
}

export function createRuntimeDashboard(parts: RuntimeDashboardParts): DashboardBackend {
  const { store, tasks, sessions } = parts;
  const summaries = createSessionSummaries({
    store,
    isHolderLive,
    isOwn: (sessionId) => sessions.getSession(sessionId) !== undefined,
    countForeignWork: true,
  });

  const find = (workId: string): TaskSnapshot | undefined => {
    try {
      return tasks.get(workId, trusted);
    } catch (error) {
      if (ErrandError.hasCode(error, 'TASK_NOT_FOUND')) return undefined;
      throw error;
    }
  };

  const foregroundEntries = (): ForegroundEntry[] => [
    ...parts.bashTool.foregroundCalls().map((call) => ({ ...call, tool: parts.bashTool })),
    ...(parts.agentTool?.foregroundCalls().map((call) => ({ ...call, tool: parts.agentTool! })) ?? []),
  ];

  return {
    events: parts.events,
    listSessions: () => summaries.list(),
    getSession: (id) => summaries.get(id),
    async stopBackgroundWork(workId) {
      // The dashboard shows background work only; a foreground call belongs to its turn.
      if (!find(workId)?.isBackgrounded) return { ok: false, reason: 'not_found' };
      const result = await parts.stop.stopBackgroundTask(workId, { initiator: 'user', caller: trusted });
      return result.ok ? { ok: true } : { ok: false, reason: result.reason };
    },
    // Only a session open in this runtime answers: reading output never resumes anything.
    outputSnapshot(sessionId, workId, maxBytes) {
      if (!sessions.getSession(sessionId)) return undefined;
      return parts.outputSnapshot(workId, maxBytes);
    },
    // Observation cursors: each viewer reads at its own offset, and the model's read never moves.
    openOutput: async (workId, position) => {
      const shown = find(workId);
      if (!shown?.isBackgrounded) return undefined;
      return tasks.openCursor(shown.id, trusted, position);
    },
    readMessages: (sessionId, page) =>
      pageFromStore((options) => store.listMessages(sessionId, options), page),
    listForegroundWork(sessionId) {
      const works: ForegroundWork[] = [];
      for (const entry of foregroundEntries()) {
        const task = find(entry.taskId);
        if (task === undefined || task.ownerSessionId !== sessionId) continue;
        if (task.isBackgrounded || isTerminalStatus(task.status)) continue;
        works.push({
          workId: task.id,
          sessionId,
          toolCallId: entry.toolCallId,
          taskKind: task.kind,
          label: task.label,
          startedAt: task.startedAt,
          canMoveToBackground: task.status === 'running',
        });
      }
      return works.sort((left, right) => left.startedAt - right.startedAt);
    },
    moveToBackground(workId): MoveToBackgroundResult {
      const entry = foregroundEntries().find((candidate) => candidate.taskId === workId);
      const task = find(workId);
      if (entry === undefined) {
        // Known but not waited on in the foreground: it already moved, or it ended.
        return task === undefined ? { ok: false, reason: 'not_found' } : { ok: false, reason: 'not_running' };
      }
      const moved = entry.tool.promote(entry.taskId);
      if (moved === undefined || !moved.isBackgrounded) return { ok: false, reason: 'not_running' };
      return { ok: true, workId: moved.id };
    },
  };
}
