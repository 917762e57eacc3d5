/** What `createErrandRuntime` hands back: the assembled runtime and its parts. */

import type { BackgroundEventFeed } from '../events/index.js';
import type { PersonNotifier } from '../notify-person/index.js';
import type { Lifeline } from '../process/index.js';
import type { BashExecutor, BashProducer, BashTool } from '../producers/bash/index.js';
import type { PtyProducer } from '../producers/pty/index.js';
import type { ScheduleProducer } from '../producers/schedule/index.js';
import type { AgentTool, SubagentProducer } from '../producers/subagent/index.js';
import type { WorkflowProducer } from '../producers/workflow/index.js';
import type { DashboardBackend } from '../server/index.js';
import type { CreateSessionOptions, Session, SessionRuntime } from '../session/index.js';
import type { SessionStore } from '../store/index.js';
import type { TaskService } from '../tasks/index.js';
import type { StopDispatch, TaskTools } from '../tools/index.js';
import type { Tracing } from '../tracing/index.js';

export interface ErrandRuntime {
  readonly tasks: TaskService;
  readonly store: SessionStore;
  readonly sessions: SessionRuntime;
  readonly executor: BashExecutor;
  readonly bash: BashProducer;
  readonly bashTool: BashTool;
  /** Absent when node-pty is not installed or was turned off. */
  readonly pty: PtyProducer | undefined;
  /** Absent when subagents were turned off. */
  readonly subagents: SubagentProducer | undefined;
  readonly agentTool: AgentTool | undefined;
  /** The schedule producer (`schedule-N` tasks); absent with `schedules: false`. */
  readonly schedules: ScheduleProducer | undefined;
  /** Absent unless `workflows` was configured. */
  readonly workflows: WorkflowProducer | undefined;
  readonly taskTools: TaskTools;
  readonly stop: StopDispatch;
  readonly events: BackgroundEventFeed;
  readonly dashboard: DashboardBackend;
  /** The notifications for the person (`notifyPerson`); undefined when none is configured. */
  readonly personNotifier: PersonNotifier | undefined;
  /** The lifeline sidecar's runtime side; undefined when it is off. */
  readonly lifeline: Lifeline | undefined;
  /** The system prompt every session gets. */
  readonly systemPrompt: string;
  /** Where the runtime's spans go (`NOOP_TRACING` when off); surfaces on top trace their calls with it. */
  readonly tracing: Tracing;
  createSession(options?: CreateSessionOptions): Session;
  resumeSession(id: string): Session;
  /** The session, resident or opened again from the store (see `SessionRuntime.loadSession`). */
  loadSession(id: string): Promise<Session>;
  /**
   * The newest output of a bash or pty task, at most `maxBytes` (default 8192) on a UTF-8 boundary,
   * without consuming it. For a pty task it is the end of the rendered screen, and `totalBytes` the
   * screen's size.
   */
  outputSnapshot(taskId: string, maxBytes?: number): { text: string; totalBytes?: number } | undefined;
  /**
   * Reads and answers the commands addressed to this runtime now (what each `commandPollMs` tick does);
   * resolves once they are answered. Does nothing when polling is off or the runtime is disposed.
   */
  pollCommands(): Promise<void>;
  /** Closes every session (stopping their work), then the producers, the service and an owned store. */
  dispose(): Promise<void>;
}
