/**
 * The workflow producer: runs workflow scripts as tasks of kind `workflow`, where the run id is the task
 * id. Runs are journaled in the session store, so a run can be resumed — in this process or after a
 * crash — under the same id, skipping finished steps (the registry resets its settlement); amended —
 * a new script supersedes the run, the new run carries its finished steps over, and the superseded run
 * is not notified; cancelled — the stop initiator is recorded before the cancel, so the notification
 * knows whose stop it reports. Legacy runs (no journal, not cancellable) show the kinds that answer
 * `cancel_not_supported`.
 */

import type { WorkflowProgressEvent } from '../../notifications/index.js';
import type { JsonValue } from '../../store/index.js';
import {
  CancelNotSupportedError,
  createTrustedCaller,
  describeError,
  InvalidArgumentError,
  isTerminalStatus,
  type Owner,
  type StopInitiator,
  type TaskId,
  TaskNotFoundError,
  type TaskOutcome,
  type TaskRunContext,
  type TaskService,
  type TaskSnapshot,
  taskFact,
} from '../../tasks/index.js';
import { BashExecutor } from '../bash/index.js';
import {
  WorkflowProducerDisposedError,
  WorkflowRunStateError,
  WorkflowScriptChangedError,
} from './errors.js';
import { memoryJournal, toJson } from './journal.js';
import { type LaunchMode, openRunJournal } from './run-journal.js';
import { recordRunEnd, workflowTaskOutcome } from './run-outcome.js';
import { importScript, type LoadedScript, loadScript, locateScript } from './script-loader.js';
import { type ExecutionOutcome, WorkflowExecution } from './workflow-execution.js';
import type { WorkflowFacts } from './workflow-facts.js';
import {
  type ResolvedWorkflowOptions,
  type WorkflowProducerOptions,
  workflowProducerOptions,
} from './workflow-options.js';
import {
  type AmendedWorkflow,
  ensureOwner,
  labelOf,
  type StartedWorkflow,
  validateText,
  type WorkflowAmendOptions,
  type WorkflowCallerOptions,
  type WorkflowStartRequest,
} from './workflow-request.js';

interface RunEntry {
  readonly sessionId: string;
  readonly legacy: boolean;
  execution: WorkflowExecution;
  context: TaskRunContext<WorkflowFacts>;
  supersededBy: string | undefined;
  carriedSteps: number;
}

const trusted = createTrustedCaller('workflow-producer');

export class WorkflowProducer {
  readonly tasks: TaskService;
  readonly options: ResolvedWorkflowOptions;
  readonly #runs = new Map<string, RunEntry>();
  readonly #stopForgetting: () => void;
  #executor: BashExecutor | undefined;
  #ownsExecutor = false;
  #disposal: Promise<void> | undefined;

  constructor(options: WorkflowProducerOptions) {
    this.options = workflowProducerOptions.resolve(options);
    this.tasks = this.options.tasks;
    this.#executor = this.options.executor;
    // A run the registry forgot is answered from the store (resume, amend); its execution goes.
    this.#stopForgetting = this.tasks.onTasksChanged(
      (change) => {
        if (change.reason === 'removed' && change.task.kind === 'workflow') {
          const entry = this.#runs.get(change.task.id);
          if (entry !== undefined && isTerminalStatus(change.task.status)) this.#runs.delete(change.task.id);
        }
      },
      { caller: trusted },
    );
  }

  /** Starts a run of `script`. Throws what validation, loading and registration throw; nothing runs then. */
  async start(request: WorkflowStartRequest): Promise<StartedWorkflow> {
    this.#ensureOpen();
    if (typeof request !== 'object' || request === null)
      throw new InvalidArgumentError('request', 'an object', request);
    ensureOwner(request.owner, 'owner');
    const args = toJson(request.args, 'args');
    validateText('description', request.description);
    const script = await loadScript(this.options.directory, request.script);
    return this.#launch(
      script,
      request.owner,
      args,
      { kind: 'new' },
      {
        description: request.description,
        toolUseId: request.toolUseId,
        cwd: request.cwd,
        env: request.env,
        legacy: request.legacy === true,
      },
    );
  }

  /**
   * Resumes a run that failed, was stopped, or was running when its process died: same run id, same
   * script (an edited script must be amended instead), finished steps replayed from the journal.
   */
  async resume(runId: string, options: WorkflowCallerOptions): Promise<StartedWorkflow> {
    this.#ensureOpen();
    ensureOwner(options?.caller, 'caller');
    const run = this.#storedRun(runId, options.caller);
    if (run.status === 'completed') {
      throw new WorkflowRunStateError(
        'WORKFLOW_RUN_FINISHED',
        run.runId,
        `Workflow run ${run.runId} completed; start a new run instead`,
      );
    }
    if (run.status === 'superseded') {
      throw new WorkflowRunStateError(
        'WORKFLOW_RUN_SUPERSEDED',
        run.runId,
        `Workflow run ${run.runId} was superseded by ${run.supersededBy}; resume that run instead`,
        { supersededBy: run.supersededBy },
      );
    }
    this.#ensureNotLive(run.runId, options.caller);
    const located = locateScript(this.options.directory, run.scriptPath);
    if (located.hash !== run.scriptHash) throw new WorkflowScriptChangedError(run.runId, located.name);
    const script = await importScript(located);
    return this.#launch(
      script,
      options.caller,
      run.input,
      { kind: 'resume', runId: run.runId },
      {
        description: this.#descriptionOf(run.runId, options.caller),
        toolUseId: options.toolUseId,
        cwd: options.cwd,
        env: options.env,
        legacy: false,
      },
    );
  }

  /**
   * Replaces a run's script: a new run (a new id) supersedes the old one, which is stopped if it still
   * runs and is not notified. Finished steps carry over unless `keepFinishedSteps` is false.
   */
  async amend(runId: string, options: WorkflowAmendOptions): Promise<AmendedWorkflow> {
    this.#ensureOpen();
    ensureOwner(options?.caller, 'caller');
    validateText('description', options.description);
    const run = this.#storedRun(runId, options.caller);
    if (run.status === 'completed') {
      throw new WorkflowRunStateError(
        'WORKFLOW_RUN_FINISHED',
        run.runId,
        `Workflow run ${run.runId} completed; start a new run instead of amending it`,
      );
    }
    if (run.status === 'superseded') {
      throw new WorkflowRunStateError(
        'WORKFLOW_RUN_SUPERSEDED',
        run.runId,
        `Workflow run ${run.runId} was already superseded by ${run.supersededBy}; amend that run instead`,
        { supersededBy: run.supersededBy },
      );
    }
    const args = options.args === undefined ? run.input : toJson(options.args, 'args');
    const script = await loadScript(this.options.directory, options.script);
    const started = await this.#launch(
      script,
      options.caller,
      args,
      { kind: 'amend', previous: run.runId, keepFinishedSteps: options.keepFinishedSteps !== false },
      {
        description: options.description ?? this.#descriptionOf(run.runId, options.caller),
        toolUseId: options.toolUseId,
        cwd: options.cwd,
        env: options.env,
        legacy: false,
      },
    );
    await this.#retire(run.runId, started.runId);
    return {
      ...started,
      superseded: run.runId,
      carriedSteps: this.#runs.get(started.runId)?.carriedSteps ?? 0,
    };
  }

  /** Answers the question a run is waiting on (`ctx.input`). */
  answer(runId: string, text: string, caller: Owner): TaskSnapshot {
    this.#ensureOpen();
    if (typeof text !== 'string' || text === '')
      throw new InvalidArgumentError('answer', 'a non-empty string', text);
    const snapshot = this.tasks.get(runId, caller);
    const entry = this.#runs.get(snapshot.id);
    if (snapshot.kind !== 'workflow' || entry === undefined) throw new TaskNotFoundError(runId);
    if (isTerminalStatus(snapshot.status)) {
      throw new WorkflowRunStateError(
        'WORKFLOW_RUN_FINISHED',
        snapshot.id,
        `Workflow run ${snapshot.id} has ended (${snapshot.status})`,
      );
    }
    entry.execution.answer(text);
    return this.tasks.get(snapshot.id, caller);
  }

  /** The question a run is waiting on, if any. */
  pendingQuestion(runId: string, caller: Owner): string | undefined {
    const snapshot = this.tasks.get(runId, caller);
    return this.#runs.get(snapshot.id)?.execution.pendingQuestion;
  }

  /**
   * Stops a run: the initiator is recorded first, then the cancel is requested, so the run's notification
   * reads who stopped it. A legacy run throws `CANCEL_NOT_SUPPORTED`.
   */
  async cancel(
    runId: string,
    options: {
      readonly caller: Owner | undefined;
      readonly initiator: StopInitiator;
      readonly reason?: string;
    },
  ): Promise<TaskSnapshot> {
    const snapshot = this.tasks.get(runId, options.caller);
    if (isTerminalStatus(snapshot.status)) return snapshot;
    if (!snapshot.cancellable) throw new CancelNotSupportedError(snapshot.id, snapshot.kind);
    this.tasks.setStopInitiator(snapshot.id, options.initiator, options.caller);
    return this.tasks.kill(snapshot.id, options.caller, options.reason);
  }

  /** The shutdown sweep of a closing session: stops its runs (initiator `system`). */
  async stopRunsOf(owner: Owner): Promise<void> {
    const live = this.tasks
      .list(owner)
      .filter((task) => task.kind === 'workflow' && task.status === 'running' && task.cancellable);
    await Promise.all(
      live.map((task) =>
        this.cancel(task.id, { caller: owner, initiator: 'system', reason: 'the session is closing' }).catch(
          (error: unknown) =>
            this.options.logger.warn(`workflow run ${task.id}: stopping it at session shutdown failed`, {
              taskId: task.id,
              error: describeError(error),
            }),
        ),
      ),
    );
  }

  async #launch(
    script: LoadedScript,
    owner: Owner,
    args: JsonValue,
    mode: LaunchMode,
    how: {
      readonly description: string | undefined;
      readonly toolUseId: string | undefined;
      readonly cwd: string | undefined;
      readonly env: Readonly<Record<string, string>> | undefined;
      readonly legacy: boolean;
    },
  ): Promise<StartedWorkflow> {
    // Loading the script took a while: a disposal that began meanwhile would never stop this run.
    this.#ensureOpen();
    const { store } = this.options;
    const detail: WorkflowFacts = {
      script: script.name,
      description: how.description ?? null,
      toolUseId: how.toolUseId ?? null,
      legacy: how.legacy,
      ...(mode.kind === 'amend' ? { amends: mode.previous } : {}),
    };
    const snapshot = await this.tasks.start<WorkflowFacts>({
      kind: 'workflow',
      label: labelOf(how.description, script.name),
      owner,
      detail,
      ...(mode.kind === 'resume' ? { resumeId: mode.runId as TaskId } : {}),
      ...(this.options.outputLimitBytes === undefined
        ? {}
        : { outputLimitBytes: this.options.outputLimitBytes }),
      run: (context) => {
        const runId = context.taskId;
        const { journal, carriedSteps } = how.legacy
          ? { journal: memoryJournal(), carriedSteps: 0 }
          : openRunJournal(
              store,
              mode,
              {
                runId,
                sessionId: owner.sessionId,
                scriptPath: script.path,
                scriptHash: script.hash,
                input: args,
              },
              this.options.logger,
            );
        if (mode.kind === 'amend') this.#markSuperseded(mode.previous, runId);
        const previous = this.#runs.get(runId);
        const execution = new WorkflowExecution({
          runId,
          attempt: (previous ? this.#attemptOf(runId) : 0) + 1,
          args,
          sessionId: owner.sessionId,
          script,
          journal,
          clock: this.options.clock,
          logger: this.options.logger,
          executor: () => this.#commandExecutor(),
          subagents: this.options.subagents,
          cwd: how.cwd ?? this.options.cwd ?? process.cwd(),
          env: how.env,
          commandOutputLimitBytes: this.options.commandOutputLimitBytes,
          commandTimeoutMs: this.options.commandTimeoutMs,
          stallAfterMs: how.legacy ? false : this.options.stallAfterMs,
          cancelGraceMs: this.options.cancelGraceMs,
          updateDetail: (patch) => context.updateDetail(patch),
          notify: (event) => this.#notify(owner.sessionId, runId, event, context),
        });
        const entry: RunEntry = {
          sessionId: owner.sessionId,
          legacy: how.legacy,
          execution,
          context,
          supersededBy: undefined,
          carriedSteps,
        };
        this.#runs.set(runId, entry);
        return {
          cancel: (reason) => execution.cancel(reason),
          done: execution.done.then(
            (outcome) => this.#finish(runId, entry, outcome),
            (error: unknown) => ({ status: 'failed' as const, error: describeError(error) }),
          ),
          cancellable: !how.legacy,
        };
      },
    });
    return { runId: snapshot.id, snapshot, script: script.name };
  }

  #attemptOf(runId: string): number {
    try {
      return this.tasks.get(runId, trusted).attempt;
    } catch {
      return 0;
    }
  }

  /** The old run learns it was superseded before it ends, so its end is never notified. */
  #markSuperseded(runId: string, by: string): void {
    const entry = this.#runs.get(runId);
    if (entry === undefined) return;
    entry.supersededBy = by;
    entry.context.updateDetail({ supersededBy: by });
  }

  /** Stops a superseded run that still runs here; takes the claim of one that ended unreported. */
  async #retire(runId: string, by: string): Promise<void> {
    let snapshot: TaskSnapshot;
    try {
      snapshot = this.tasks.get(runId, trusted);
    } catch {
      return; // A run of an earlier process: nothing runs here.
    }
    if (isTerminalStatus(snapshot.status)) {
      this.tasks.claim(runId, trusted);
      return;
    }
    try {
      await this.tasks.kill(runId, trusted, `superseded by ${by}`, { initiator: 'model' });
    } catch (error) {
      this.options.logger.warn(`workflow run ${runId}: stopping it after it was superseded failed`, {
        taskId: runId,
        error: describeError(error),
      });
    }
  }

  #finish(runId: string, entry: RunEntry, outcome: ExecutionOutcome): TaskOutcome<WorkflowFacts> {
    if (!entry.legacy && entry.supersededBy === undefined) {
      const initiator = this.#tryGet(runId, trusted)?.stopInitiator;
      recordRunEnd(this.options.store, runId, outcome, initiator, this.options.logger);
    }
    return workflowTaskOutcome(outcome, entry.supersededBy);
  }

  #notify(
    sessionId: string,
    runId: string,
    event: WorkflowProgressEvent,
    context: TaskRunContext<WorkflowFacts>,
  ): void {
    if (event.type === 'stalled') context.updateDetail({ stalledForMs: event.idleMs ?? null });
    let policy: ReturnType<NonNullable<ResolvedWorkflowOptions['policyOf']>>;
    try {
      policy = this.options.policyOf?.(sessionId);
    } catch (error) {
      this.options.logger.warn(`workflow run ${runId}: finding the session's delivery policy failed`, {
        taskId: runId,
        error: describeError(error),
      });
      return;
    }
    if (policy === undefined) return;
    const withHelp: WorkflowProgressEvent =
      event.type === 'input_needed' && event.howToAnswer === undefined
        ? {
            ...event,
            howToAnswer: `Answer it with workflow_answer (task_id "${runId}"). If only the user can answer, ask them and pass their answer on. The run waits until it is answered.`,
          }
        : event;
    void policy.notifyWorkflowProgress(runId, withHelp);
  }

  #storedRun(runId: string, caller: Owner) {
    if (typeof runId !== 'string') throw new TaskNotFoundError(String(runId));
    const run = this.options.store.getRun(runId);
    if (run === undefined || run.sessionId !== caller.sessionId) {
      if (this.#runs.get(runId)?.legacy === true && this.#runs.get(runId)?.sessionId === caller.sessionId) {
        throw new WorkflowRunStateError(
          'WORKFLOW_RUN_NOT_RESUMABLE',
          runId,
          `Workflow run ${runId} is a legacy run: it has no journal, so it cannot be resumed or amended`,
        );
      }
      throw new TaskNotFoundError(runId);
    }
    return run;
  }

  /** A run's description: from the registry, else from the task record an earlier process stored. */
  #descriptionOf(runId: string, caller: Owner): string | undefined {
    const snapshot = this.#tryGet(runId, caller);
    const live = snapshot === undefined ? undefined : taskFact(snapshot, 'description');
    if (live !== undefined) return live;
    try {
      const stored = this.options.store.getTask(runId, caller.sessionId);
      return stored === undefined ? undefined : taskFact(stored, 'description');
    } catch {
      return undefined;
    }
  }

  #ensureNotLive(runId: string, caller: Owner): void {
    const snapshot = this.#tryGet(runId, caller);
    if (snapshot !== undefined && !isTerminalStatus(snapshot.status)) {
      throw new WorkflowRunStateError(
        'WORKFLOW_RUN_ACTIVE',
        runId,
        `Workflow run ${runId} is still ${snapshot.status}`,
      );
    }
  }

  #tryGet(runId: string, caller: Owner | typeof trusted): TaskSnapshot | undefined {
    try {
      return this.tasks.get(runId, caller);
    } catch {
      return undefined;
    }
  }

  #commandExecutor(): BashExecutor {
    if (this.#executor === undefined) {
      this.#executor = new BashExecutor();
      this.#ownsExecutor = true;
    }
    return this.#executor;
  }

  #ensureOpen(): void {
    if (this.#disposal) throw new WorkflowProducerDisposedError();
  }

  /** Stops every run (initiator `system`), waits for them, and disposes a private executor. Idempotent. */
  dispose(): Promise<void> {
    this.#disposal ??= (async () => {
      const entries = [...this.#runs.entries()];
      await Promise.all(
        entries.map(async ([runId, entry]) => {
          const snapshot = this.#tryGet(runId, trusted);
          if (snapshot !== undefined && snapshot.status === 'running' && snapshot.cancellable) {
            // Through the registry, so the run records who stopped it.
            await this.tasks
              .kill(runId, trusted, 'the workflow producer is disposed', { initiator: 'system' })
              .catch(() => undefined);
          }
          // Disposal stops legacy runs too: they refuse callers, not their owner's teardown.
          entry.execution.cancel('the workflow producer is disposed');
          await entry.execution.done;
        }),
      );
      this.#stopForgetting();
      if (this.#ownsExecutor) await this.#executor?.dispose();
    })();
    return this.#disposal;
  }
}

export function createWorkflowProducer(options: WorkflowProducerOptions): WorkflowProducer {
  return new WorkflowProducer(options);
}

/** A disposer-shaped helper for `onSessionShutdown`: `(session) => workflows.stopRunsOf(session.owner)`. */
export type WorkflowShutdownSweep = (session: { readonly owner: Owner }) => Promise<void>;

export function workflowShutdownSweep(producer: WorkflowProducer): WorkflowShutdownSweep {
  return (session) => producer.stopRunsOf(session.owner);
}
