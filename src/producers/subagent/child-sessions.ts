/**
 * The child sessions of subagents: one session runtime of their own, over the parent's task service and
 * store, so a child gets its own tools, system prompt, model and delivery policy while its history and
 * task records land in the same store (with `parentId` pointing at the parent session).
 */

import {
  createSessionRuntime,
  type ModelPort,
  type Session,
  type SessionRuntime,
} from '../../session/index.js';
import type { Owner } from '../../tasks/index.js';
import { type AnyToolDefinition, createTaskTools, type TaskTools } from '../../tools/index.js';
import { createBashTool } from '../bash/index.js';
import type { ResolvedAgentProfile } from './agent-profile.js';
import type { ResolvedSubagentOptions, SubagentChildContext } from './subagent-options.js';

/** What one child session is opened with. */
export interface ChildSessionRequest {
  readonly parentSessionId: string;
  readonly depth: number;
  readonly profile: ResolvedAgentProfile | undefined;
  /** The (metered) model the child talks to. */
  readonly model: ModelPort;
  /** Re-open this stored child session (a resumed subagent) instead of creating one. */
  readonly resumeSessionId?: string;
  /** The id of a new child session. */
  readonly sessionId?: string;
  readonly title?: string;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
}

interface ChildConfiguration {
  readonly request: ChildSessionRequest;
}

export class ChildSessions {
  readonly runtime: SessionRuntime;
  readonly #options: ResolvedSubagentOptions;
  readonly #builtIn: readonly AnyToolDefinition[];
  readonly #taskTools: TaskTools | undefined;
  /** The configuration of the session being opened right now (sessions are built synchronously). */
  #opening: ChildConfiguration | undefined;
  readonly #depths = new Map<string, number>();
  /** The owners of child sessions whose tools include the children's task tools. */
  readonly #served = new WeakSet<Owner>();

  constructor(options: ResolvedSubagentOptions) {
    this.#options = options;
    const builtIn: AnyToolDefinition[] = [];
    if (options.bash) {
      builtIn.push(
        createBashTool({
          ...options.bashTool,
          producer: options.bash,
          backgroundRuntimeCapMs: options.backgroundBashRuntimeCapMs,
          ...(options.bashTool.clock === undefined ? { clock: options.clock } : {}),
        }),
      );
    }
    if (options.taskTools) {
      // They serve the child sessions given them, never the parent: a parent without task tools of its
      // own cannot start a background subagent nobody collects.
      this.#taskTools = createTaskTools({
        tasks: options.tasks,
        controllerName: 'subagent-task-tools',
        controllerScope: { serves: (owner) => this.#served.has(owner) },
      });
      builtIn.push(...this.#taskTools.tools);
    }
    this.#builtIn = builtIn;
    this.runtime = createSessionRuntime({
      store: options.store,
      tasks: options.tasks,
      model: (session) => this.#configurationOf(session).request.model,
      tools: (session) => this.#toolsOf(session),
      ...(options.limits === undefined ? {} : { limits: options.limits }),
      ...(options.notifications === undefined ? {} : { notifications: options.notifications }),
      logger: options.logger,
      now: () => options.clock.now(),
    });
  }

  /** How deep a session is: 0 for a session that is not a child of this producer. */
  depthOf(sessionId: string): number {
    return this.#depths.get(sessionId) ?? 0;
  }

  /** Creates (or re-opens) a child session with its configuration; synchronous, like session creation. */
  open(request: ChildSessionRequest): Session {
    this.#opening = { request };
    try {
      const session =
        request.resumeSessionId === undefined
          ? this.runtime.createSession({
              ...(request.sessionId === undefined ? {} : { id: request.sessionId }),
              parentId: request.parentSessionId,
              ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
              ...(request.env === undefined ? {} : { env: request.env }),
              ...(request.title === undefined ? {} : { title: request.title }),
            })
          : this.runtime.resumeSession(
              request.resumeSessionId,
              request.env === undefined ? {} : { env: request.env },
            );
      const prompt = request.profile?.systemPrompt ?? this.#options.systemPrompt;
      session.setSystemPrompt(prompt);
      this.#depths.set(session.id, request.depth);
      return session;
    } finally {
      this.#opening = undefined;
    }
  }

  #configurationOf(session: Session): ChildConfiguration {
    const configuration = this.#opening;
    if (configuration === undefined) {
      // Only `open` creates sessions in this runtime.
      throw new Error(`Child session ${session.id} was opened outside the subagent producer`);
    }
    return configuration;
  }

  #toolsOf(session: Session): readonly AnyToolDefinition[] {
    const { request } = this.#configurationOf(session);
    const context: SubagentChildContext = {
      session,
      profile: request.profile,
      depth: request.depth,
      parentSessionId: request.parentSessionId,
      backgroundBashRuntimeCapMs: this.#options.backgroundBashRuntimeCapMs,
    };
    const all = [...this.#builtIn, ...(this.#options.tools?.(context) ?? [])];
    const allowed = request.profile?.tools;
    const names = allowed === undefined ? undefined : new Set(allowed);
    const tools = names === undefined ? all : all.filter((tool) => names.has(tool.name));
    const taskTools = this.#taskTools;
    // A profile that leaves out task_output or task_kill leaves the child unable to collect or stop.
    if (taskTools && tools.includes(taskTools.taskOutput) && tools.includes(taskTools.taskKill)) {
      this.#served.add(session.owner);
    }
    return tools;
  }

  /** Forgets a closed child's depth. */
  forget(sessionId: string): void {
    this.#depths.delete(sessionId);
  }

  /** Closes every child session (which stops their work) and detaches the children's task tools. */
  async dispose(): Promise<void> {
    await this.runtime.dispose();
    this.#taskTools?.dispose();
  }
}
