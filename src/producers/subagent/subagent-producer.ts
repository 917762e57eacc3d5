/**
 * The subagent producer: registers subagent runs with the task service (kind `agent`) and adapts child
 * runs to task hooks. The task owns an AbortController and starts the child inside `run()`; `cancel`
 * aborts that signal before or after the child is published; `done` waits for the child's result and
 * its release. Completed → final output (the child's final text, with usage in `detail.usage`); aborted
 * → killed; any other end → failed. The child's history stays in its own session.
 */
import { randomUUID } from 'node:crypto';
import type { Session } from '../../session/index.js';
import {
  createTrustedCaller,
  type Disposer,
  isTerminalStatus,
  type Owner,
  type TaskId,
  type TaskService,
  type TaskSnapshot,
} from '../../tasks/index.js';
import type { StopDispatch, StopStrategy } from '../../tools/index.js';
import type { ResolvedAgentProfile } from './agent-profile.js';
import { ChildRun, type ChildRunResult, DEFAULT_STOP_REASON } from './child-run.js';
import { ChildSessions } from './child-sessions.js';
import {
  AgentProfileNotFoundError,
  SubagentDepthExceededError,
  SubagentNeedsSessionError,
  SubagentNotContinuableError,
  SubagentProducerDisposedError,
} from './errors.js';
import type { SubagentFacts } from './subagent-facts.js';
import {
  type ResolvedSubagentOptions,
  type SubagentProducerOptions,
  subagentProducerOptions,
} from './subagent-options.js';
import { subagentOutcome } from './subagent-outcome.js';
import { labelOf, validateMessage, validateRequest } from './subagent-request.js';
import { createSubagentStopStrategy } from './subagent-stop-strategy.js';

const MAX_PROMPT_DETAIL_CHARACTERS = 2000;

export interface SubagentRequest {
  /** The task for the child, as its first user message. */
  readonly prompt: string;
  /** A few words for people and notifications; the task's label (else the prompt's first line). */
  readonly description?: string;
  /** The agent profile to run under. Default: none (the producer's model, prompt and tools). */
  readonly profile?: string;
  /** The parent session; it owns the task and is the child session's parent. */
  readonly owner: Owner;
  /** Registered as background work. Default true; foreground work can be moved to the background. */
  readonly background?: boolean;
  /** The tool call that started it (`<tool-use-id>` in the notification). */
  readonly toolUseId?: string;
  /** The child's working directory. Default: the child runtime's default (`process.cwd()`). */
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
}

export interface ResumeSubagentOptions {
  /** The parent session that owns the finished subagent. */
  readonly caller: Owner;
  readonly background?: boolean;
  readonly toolUseId?: string;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
}

export interface StartedSubagent {
  readonly taskId: TaskId;
  /** The snapshot right after registration. */
  readonly snapshot: TaskSnapshot<SubagentFacts>;
  /** The run's result; settles after the child was released. Never rejects. */
  readonly result: Promise<ChildRunResult>;
}

/** A child run that is part of other work (a workflow step), not a task of its own. */
export interface DetachedSubagentRequest {
  readonly prompt: string;
  readonly parentSessionId: string;
  readonly profile?: string;
  readonly description?: string;
  readonly signal: AbortSignal;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Called on every child event. */
  readonly onActivity?: () => void;
}

export type SubagentMessageOutcome =
  | { readonly kind: 'forwarded'; readonly snapshot: TaskSnapshot }
  | { readonly kind: 'resumed'; readonly started: StartedSubagent };

interface AgentRecord {
  taskId: TaskId | undefined;
  readonly parentSessionId: string;
  readonly depth: number;
  readonly profile: ResolvedAgentProfile | undefined;
  readonly description: string | undefined;
  childSessionId: string | undefined;
  run: ChildRun | undefined;
  lingering: Session | undefined;
}

const trusted = createTrustedCaller('subagent-producer');

export class SubagentProducer {
  readonly tasks: TaskService;
  readonly options: ResolvedSubagentOptions;
  /** The stop protocol of kind `agent`; register it with `registerStopStrategy`. */
  readonly stopStrategy: StopStrategy;
  readonly #host: ChildSessions;
  readonly #agents = new Map<string, AgentRecord>();
  readonly #stopForgetting: Disposer;
  #disposal: Promise<void> | undefined;

  constructor(options: SubagentProducerOptions) {
    this.options = subagentProducerOptions.resolve(options);
    this.tasks = this.options.tasks;
    this.#host = new ChildSessions(this.options);
    this.stopStrategy = createSubagentStopStrategy({
      policyOf: this.options.policyOf,
      stopSettleMs: this.options.stopSettleMs,
    });
    // A task the registry forgot can no longer be resumed or messaged: its record goes too.
    this.#stopForgetting = this.tasks.onTasksChanged(
      (change) => {
        if (change.reason === 'removed' && change.task.kind === 'agent') this.#agents.delete(change.task.id);
      },
      { caller: trusted },
    );
  }

  /** The profiles a call may name. */
  get profiles(): readonly ResolvedAgentProfile[] {
    return [...this.options.profiles.values()];
  }

  /** The runtime of the child sessions (their events, their delivery policies). */
  get childRuntime() {
    return this.#host.runtime;
  }

  /** Registers the `agent` stop strategy with a stop dispatch; returns the disposer. */
  registerStopStrategy(dispatch: StopDispatch): Disposer {
    return dispatch.registerStrategy('agent', this.stopStrategy);
  }

  /** The child session of a subagent task this producer started, once it was published. */
  childSessionOf(taskId: string): string | undefined {
    return this.#agents.get(taskId)?.childSessionId;
  }

  /** Starts a subagent. Throws what validation and registration throw; nothing runs then. */
  async start(request: SubagentRequest): Promise<StartedSubagent> {
    this.#ensureOpen();
    validateRequest(request);
    const profile = this.#profile(request.profile);
    const depth = this.#depthUnder(request.owner.sessionId);
    const record: AgentRecord = {
      taskId: undefined,
      parentSessionId: request.owner.sessionId,
      depth,
      profile,
      description: request.description,
      childSessionId: undefined,
      run: undefined,
      lingering: undefined,
    };
    return this.#launch(record, request.owner, request.prompt, {
      background: request.background ?? true,
      toolUseId: request.toolUseId,
      cwd: request.cwd,
      env: request.env,
    });
  }

  /**
   * Resumes a finished subagent with a follow-up message under the same task id: its child session is
   * re-opened with its history, and the registry resets the task's settlement (claim, end, error).
   */
  async resume(taskId: string, message: string, options: ResumeSubagentOptions): Promise<StartedSubagent> {
    this.#ensureOpen();
    validateMessage(message);
    if (typeof options?.caller?.sessionId !== 'string') throw new SubagentNeedsSessionError();
    const snapshot = this.tasks.get(taskId, options.caller);
    const record = this.#agents.get(snapshot.id);
    if (snapshot.kind !== 'agent' || record === undefined) {
      throw new SubagentNotContinuableError(
        snapshot.id,
        'this producer did not start it (or was restarted since)',
      );
    }
    if (!isTerminalStatus(snapshot.status)) {
      throw new SubagentNotContinuableError(snapshot.id, 'it is still running; send it a message instead');
    }
    if (snapshot.status === 'lost') throw new SubagentNotContinuableError(snapshot.id, 'it was lost');
    if (record.profile?.continuable === false) {
      throw new SubagentNotContinuableError(
        snapshot.id,
        `its profile ${record.profile.name} is not continuable`,
      );
    }
    if (record.lingering) {
      // The follow-up runs in a fresh instance of the child session; the old one's work stops.
      const lingering = record.lingering;
      record.lingering = undefined;
      await lingering.close();
    }
    return this.#launch(record, options.caller, message, {
      background: options.background ?? true,
      toolUseId: options.toolUseId,
      cwd: options.cwd,
      env: options.env,
      resumeId: snapshot.id,
    });
  }

  /**
   * Sends a message to a subagent: a running one receives it at its next turn boundary; a finished,
   * continuable one is resumed with it.
   */
  async message(
    taskId: string,
    message: string,
    options: ResumeSubagentOptions,
  ): Promise<SubagentMessageOutcome> {
    this.#ensureOpen();
    validateMessage(message);
    if (typeof options?.caller?.sessionId !== 'string') throw new SubagentNeedsSessionError();
    const snapshot = this.tasks.get(taskId, options.caller);
    if (snapshot.kind !== 'agent') throw new SubagentNotContinuableError(snapshot.id, 'it is not a subagent');
    if (!isTerminalStatus(snapshot.status)) {
      return { kind: 'forwarded', snapshot: this.tasks.sendMessage(snapshot.id, message, options.caller) };
    }
    return { kind: 'resumed', started: await this.resume(snapshot.id, message, options) };
  }

  /** Runs a child to its end without registering a task (a workflow's agent step). Never rejects. */
  run(request: DetachedSubagentRequest): Promise<ChildRunResult> {
    this.#ensureOpen();
    validateMessage(request.prompt, 'prompt');
    const profile = this.#profile(request.profile);
    const depth = this.#depthUnder(request.parentSessionId);
    const run = new ChildRun(this.#host, this.options, {
      prompt: request.prompt,
      parentSessionId: request.parentSessionId,
      depth,
      profile,
      sessionId: `agent-step.${randomUUID()}`,
      ...(request.description === undefined ? {} : { title: request.description }),
      ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
      ...(request.env === undefined ? {} : { env: request.env }),
      signal: request.signal,
      ...(request.onActivity === undefined ? {} : { onActivity: request.onActivity }),
    });
    return run.result;
  }

  async #launch(
    record: AgentRecord,
    owner: Owner,
    prompt: string,
    how: {
      readonly background: boolean;
      readonly toolUseId: string | undefined;
      readonly cwd: string | undefined;
      readonly env: Readonly<Record<string, string>> | undefined;
      readonly resumeId?: TaskId;
    },
  ): Promise<StartedSubagent> {
    // A resume waited for its lingering child to close: a disposal that began meanwhile would miss it.
    this.#ensureOpen();
    let run: ChildRun | undefined;
    const detail: SubagentFacts = {
      description: record.description ?? null,
      prompt: prompt.slice(0, MAX_PROMPT_DETAIL_CHARACTERS),
      profile: record.profile?.name ?? null,
      toolUseId: how.toolUseId ?? null,
      childSessionId: record.childSessionId ?? null,
    };
    const snapshot = await this.tasks.start<SubagentFacts>({
      kind: 'agent',
      label: labelOf(record.description, prompt),
      owner,
      background: how.background,
      detail,
      ...(how.resumeId === undefined ? {} : { resumeId: how.resumeId }),
      ...(this.options.outputLimitBytes === undefined
        ? {}
        : { outputLimitBytes: this.options.outputLimitBytes }),
      run: (context) => {
        const controller = new AbortController();
        const current = new ChildRun(this.#host, this.options, {
          prompt,
          parentSessionId: record.parentSessionId,
          depth: record.depth,
          profile: record.profile,
          ...(record.childSessionId === undefined
            ? { sessionId: `${context.taskId}.${randomUUID().slice(0, 8)}` }
            : { resumeSessionId: record.childSessionId }),
          ...(record.description === undefined ? {} : { title: record.description }),
          ...(how.cwd === undefined ? {} : { cwd: how.cwd }),
          ...(how.env === undefined ? {} : { env: how.env }),
          signal: controller.signal,
          onPublish: (childSessionId) => {
            record.childSessionId = childSessionId;
            context.updateDetail({ childSessionId });
          },
          onLinger: (child) => this.#linger(record, child, owner),
        });
        run = current;
        return {
          cancel: (reason) => {
            if (!controller.signal.aborted) controller.abort(new Error(reason ?? DEFAULT_STOP_REASON));
          },
          done: current.result.then(subagentOutcome, (error: unknown) => ({
            status: 'failed' as const,
            error: error instanceof Error ? error.message : String(error),
          })),
          sendMessage: (message) => current.sendMessage(message, context.taskId),
        };
      },
    });
    record.taskId = snapshot.id;
    record.run = run;
    this.#agents.set(snapshot.id, record);
    return { taskId: snapshot.id, snapshot, result: run!.result };
  }

  /**
   * A completed child that left background work keeps running, sealed, until that work ends; then its
   * session closes. Closing the parent session closes it sooner.
   */
  #linger(record: AgentRecord, child: Session, parent: Owner): void {
    record.lingering = child;
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      if (record.lingering === child) record.lingering = undefined;
      stopWatching();
      detachCleanup();
      await child.close();
      this.#host.forget(child.id);
    };
    const stopWatching = this.tasks.onTasksChanged(
      (change) => {
        if (change.reason === 'settled' || change.reason === 'removed') {
          if (change.tasks().every((task) => isTerminalStatus(task.status))) void close();
        }
      },
      { caller: child.owner },
    );
    let detachCleanup: Disposer = () => {};
    try {
      detachCleanup = parent.addCleanup(close);
    } catch {
      void close();
      return;
    }
    if (this.tasks.list(child.owner).every((task) => isTerminalStatus(task.status))) void close();
  }

  #profile(name: string | undefined): ResolvedAgentProfile | undefined {
    if (name === undefined) return undefined;
    const profile = this.options.profiles.get(name);
    if (profile === undefined) throw new AgentProfileNotFoundError(name, [...this.options.profiles.keys()]);
    return profile;
  }

  #depthUnder(parentSessionId: string): number {
    const depth = this.#host.depthOf(parentSessionId) + 1;
    if (depth > this.options.maxDepth) throw new SubagentDepthExceededError(depth, this.options.maxDepth);
    return depth;
  }

  #ensureOpen(): void {
    if (this.#disposal) throw new SubagentProducerDisposedError();
  }

  /** Stops every running subagent, closes every child session, detaches the children's tools. Idempotent. */
  dispose(): Promise<void> {
    this.#disposal ??= (async () => {
      const live = [...this.#agents.values()].filter((record) => record.taskId !== undefined);
      await Promise.all(
        live.map(async (record) => {
          try {
            const snapshot = this.tasks.get(record.taskId!, trusted);
            if (!isTerminalStatus(snapshot.status)) {
              await this.tasks.kill(snapshot.id, trusted, 'the subagent producer is disposed', {
                initiator: 'system',
              });
            }
          } catch {
            // Forgotten by the registry meanwhile.
          }
          await record.run?.result;
        }),
      );
      await this.#host.dispose();
      this.#stopForgetting();
      this.#agents.clear();
    })();
    return this.#disposal;
  }
}

export function createSubagentProducer(options: SubagentProducerOptions): SubagentProducer {
  return new SubagentProducer(options);
}
