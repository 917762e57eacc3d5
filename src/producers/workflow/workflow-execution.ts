/**
 * One execution of a workflow run: builds the script's context over a journal, runs the script, and
 * reports how it ended. Cancelling aborts the context's signal, rejects pending waits, kills running
 * commands and subagents, and then waits for the script to return — at most `cancelGraceMs`, because
 * JavaScript cannot force an async function to stop; a script that ignores its signal is abandoned.
 * `done` settles after every command and subagent the execution started has stopped.
 */
import type { WorkflowProgressEvent } from '../../notifications/index.js';
import type { JsonValue } from '../../store/index.js';
import type { Logger } from '../../tasks/index.js';
import { describeError, InvalidArgumentError, MAX_TIMER_DELAY_MS } from '../../tasks/index.js';
import type { BashExecutor, Clock } from '../bash/index.js';
import type { SubagentProducer } from '../subagent/index.js';
import { runCommand } from './command-step.js';
import {
  WorkflowAgentFailedError,
  WorkflowAgentUnavailableError,
  WorkflowCancelledError,
  WorkflowNoPendingInputError,
} from './errors.js';
import { type JournalEntry, type StepJournal, toJson } from './journal.js';
import { resultTextOf } from './run-text.js';
import type { LoadedScript } from './script-loader.js';
import { StallWatch } from './stall-watch.js';
import { SLEEP_DEADLINE_SUFFIX, StepNames } from './step-names.js';
import type {
  WorkflowAgentOptions,
  WorkflowAgentResult,
  WorkflowBashOptions,
  WorkflowCommandResult,
  WorkflowContext,
} from './workflow-context.js';
import type { WorkflowFacts } from './workflow-facts.js';

const MAX_PROGRESS_CHARACTERS = 2000;

export interface ExecutionDependencies {
  readonly runId: string;
  readonly attempt: number;
  readonly args: JsonValue;
  /** The session that owns the run (a subagent step's child hangs under it). */
  readonly sessionId: string;
  readonly script: LoadedScript;
  readonly journal: StepJournal;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The executor commands run on (created on first use). */
  readonly executor: () => BashExecutor;
  readonly subagents: SubagentProducer | undefined;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>> | undefined;
  readonly commandOutputLimitBytes: number;
  readonly commandTimeoutMs: number | false;
  readonly stallAfterMs: number | false;
  readonly cancelGraceMs: number;
  /** Publishes progress facts into the task's detail. */
  readonly updateDetail: (patch: WorkflowFacts) => void;
  /** Raises a stall or an input-needed notification. */
  readonly notify: (event: WorkflowProgressEvent) => void;
}

export interface ExecutionOutcome {
  readonly status: 'completed' | 'killed' | 'failed';
  readonly result?: JsonValue;
  readonly resultText?: string;
  readonly error?: string;
  /** True when a cancelled script did not return within the grace period and was left behind. */
  readonly abandoned: boolean;
  readonly stepsDone: number;
  readonly stepsReplayed: number;
}

interface PendingInput {
  readonly question: string;
  readonly resolve: (answer: string) => void;
  readonly reject: (error: unknown) => void;
}

export class WorkflowExecution {
  readonly done: Promise<ExecutionOutcome>;
  readonly #deps: ExecutionDependencies;
  readonly #controller = new AbortController();
  readonly #names = new StepNames();
  readonly #inputs: PendingInput[] = [];
  /** Commands and subagents still running, awaited before `done` settles. */
  readonly #resources = new Set<Promise<unknown>>();
  readonly #stall: StallWatch;
  #stepsDone = 0;
  #stepsReplayed = 0;

  constructor(deps: ExecutionDependencies) {
    this.#deps = deps;
    this.#stall = new StallWatch(deps.clock, deps.stallAfterMs, (report) =>
      deps.notify({
        type: 'stalled',
        idleMs: report.idleMs,
        ...(report.lastMessage === undefined ? {} : { message: report.lastMessage }),
      }),
    );
    this.done = this.#run();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The oldest unanswered question, if the script is waiting for one. */
  get pendingQuestion(): string | undefined {
    return this.#inputs[0]?.question;
  }

  /** Requests cancellation: synchronous and idempotent. */
  cancel(reason?: string): void {
    if (this.#controller.signal.aborted) return;
    this.#controller.abort(new WorkflowCancelledError(this.#deps.runId, reason ?? 'cancelled'));
    for (const input of this.#inputs.splice(0)) input.reject(this.#controller.signal.reason);
  }

  /** Answers the oldest pending question. Throws `WORKFLOW_NO_PENDING_INPUT` when none is pending. */
  answer(text: string): void {
    const input = this.#inputs.shift();
    if (input === undefined) throw new WorkflowNoPendingInputError(this.#deps.runId);
    input.resolve(text);
  }

  async #run(): Promise<ExecutionOutcome> {
    const context = this.#context();
    const signal = this.#controller.signal;
    const finished = Promise.resolve()
      .then(() => this.#deps.script.run(context))
      .then(
        (value) => ({ kind: 'value' as const, value }),
        (error: unknown) => ({ kind: 'error' as const, error }),
      );
    let cancelGrace: (() => void) | undefined;
    let onAbort: (() => void) | undefined;
    const abandoned = new Promise<{ kind: 'abandoned' }>((resolve) => {
      onAbort = () => {
        cancelGrace = this.#deps.clock.schedule(this.#deps.cancelGraceMs, () =>
          resolve({ kind: 'abandoned' }),
        );
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    const first = await Promise.race([finished, abandoned]);
    // A cancel that comes after the script returned (disposal cancels ended runs too) arms no grace timer.
    if (onAbort) signal.removeEventListener('abort', onAbort);
    cancelGrace?.();
    this.#stall.stop();
    // Commands and subagents were cancelled with the signal; none is left behind.
    await Promise.allSettled([...this.#resources]);
    const counts = { stepsDone: this.#stepsDone, stepsReplayed: this.#stepsReplayed };
    if (first.kind === 'abandoned') {
      this.#deps.logger.warn(
        `workflow run ${this.#deps.runId}: the script did not return within ${this.#deps.cancelGraceMs} ms of its cancellation and was abandoned`,
        { taskId: this.#deps.runId },
      );
      return { status: 'killed', abandoned: true, ...counts };
    }
    if (signal.aborted) return { status: 'killed', abandoned: false, ...counts };
    if (first.kind === 'error')
      return { status: 'failed', error: describeError(first.error), abandoned: false, ...counts };
    try {
      const result = toJson(first.value, 'the workflow');
      return { status: 'completed', result, resultText: resultTextOf(result), abandoned: false, ...counts };
    } catch (error) {
      return { status: 'failed', error: describeError(error), abandoned: false, ...counts };
    }
  }

  #context(): WorkflowContext {
    const deps = this.#deps;
    return Object.freeze({
      runId: deps.runId,
      attempt: deps.attempt,
      args: deps.args,
      signal: this.#controller.signal,
      step: <T>(name: string, fn: (signal: AbortSignal) => T | Promise<T>) => {
        this.#ensureActive();
        if (typeof fn !== 'function') throw new InvalidArgumentError('fn', 'a function', fn);
        return this.#step(this.#names.explicit(name), fn) as Promise<T>;
      },
      bash: (command: string, options: WorkflowBashOptions = {}) => {
        this.#ensureActive();
        if (typeof command !== 'string' || command.trim() === '') {
          throw new InvalidArgumentError('command', 'a non-empty string', command);
        }
        const name = this.#names.derived('bash', command, options.name);
        return this.#step(name, (signal) =>
          runCommand(deps, command, options, signal, {
            track: (stopped) => this.#track(stopped),
            onOutput: () => this.#stall.note(),
          }),
        ) as Promise<WorkflowCommandResult>;
      },
      agent: (prompt: string, options: WorkflowAgentOptions = {}) => {
        this.#ensureActive();
        if (typeof prompt !== 'string' || prompt.trim() === '') {
          throw new InvalidArgumentError('prompt', 'a non-empty string', prompt);
        }
        const name = this.#names.derived('agent', options.description ?? prompt, options.name);
        return this.#step(name, (signal) =>
          this.#runAgent(prompt, options, signal),
        ) as Promise<WorkflowAgentResult>;
      },
      sleep: (ms: number, options: { readonly name?: string } = {}) => {
        this.#ensureActive();
        if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0 || ms > MAX_TIMER_DELAY_MS) {
          throw new InvalidArgumentError('ms', `an integer from 0 to ${MAX_TIMER_DELAY_MS}`, ms);
        }
        return this.#sleep(this.#names.derived('sleep', String(ms), options.name), ms);
      },
      progress: (message: string) => {
        if (typeof message !== 'string') throw new InvalidArgumentError('message', 'a string', message);
        const text = message.slice(0, MAX_PROGRESS_CHARACTERS);
        this.#stall.note(text);
        deps.updateDetail({ progress: text, progressAt: deps.clock.now() });
      },
      input: (question: string, options: { readonly name?: string } = {}) => {
        this.#ensureActive();
        if (typeof question !== 'string' || question.trim() === '') {
          throw new InvalidArgumentError('question', 'a non-empty string', question);
        }
        return this.#input(this.#names.derived('input', question, options.name), question);
      },
    });
  }

  #ensureActive(): void {
    this.#controller.signal.throwIfAborted();
  }

  async #step(name: string, fn: (signal: AbortSignal) => unknown): Promise<unknown> {
    const { journal, clock } = this.#deps;
    const stored = journal.get(name);
    if (stored?.state === 'done') {
      this.#stepsReplayed += 1;
      this.#publishCounts(name);
      return stored.result ?? null;
    }
    this.#stall.note(`step ${name} started`);
    this.#deps.updateDetail({ currentStep: name });
    const startedAt = clock.now();
    let value: unknown;
    try {
      value = await fn(this.#controller.signal);
    } catch (error) {
      this.#record({ name, state: 'failed', error: describeError(error), startedAt, endedAt: clock.now() });
      throw error;
    }
    const result = toJson(value, `step ${JSON.stringify(name)}`);
    const entry = this.#record({ name, state: 'done', result, startedAt, endedAt: clock.now() });
    this.#stepsDone += 1;
    this.#stall.note(`step ${name} done`);
    this.#publishCounts(name);
    return entry?.result ?? result;
  }

  #record(write: Parameters<StepJournal['record']>[0]): JournalEntry | undefined {
    try {
      return this.#deps.journal.record(write);
    } catch (error) {
      if (write.state === 'failed') {
        this.#deps.logger.warn(
          `workflow run ${this.#deps.runId}: recording failed step ${write.name} failed`,
          {
            taskId: this.#deps.runId,
            error: describeError(error),
          },
        );
        return undefined;
      }
      throw error;
    }
  }

  #publishCounts(step: string): void {
    this.#deps.updateDetail({
      stepsDone: this.#stepsDone,
      stepsReplayed: this.#stepsReplayed,
      lastStep: step,
    });
  }

  async #runAgent(
    prompt: string,
    options: WorkflowAgentOptions,
    signal: AbortSignal,
  ): Promise<WorkflowAgentResult> {
    const deps = this.#deps;
    if (deps.subagents === undefined) throw new WorkflowAgentUnavailableError();
    const run = deps.subagents.run({
      prompt,
      parentSessionId: deps.sessionId,
      ...(options.profile === undefined ? {} : { profile: options.profile }),
      ...(options.description === undefined ? {} : { description: options.description }),
      signal,
      cwd: deps.cwd,
      ...(deps.env === undefined ? {} : { env: deps.env }),
      onActivity: () => this.#stall.note(),
    });
    this.#track(run);
    const result = await run;
    signal.throwIfAborted();
    if (result.status !== 'completed') throw new WorkflowAgentFailedError(result.status, result.error);
    return {
      text: result.text,
      usage: {
        totalTokens: result.usage.totalTokens,
        toolUses: result.usage.toolUses,
        durationMs: result.usage.durationMs,
      },
      childSessionId: result.childSessionId ?? null,
    };
  }

  async #sleep(name: string, ms: number): Promise<void> {
    const { journal, clock } = this.#deps;
    if (journal.get(name)?.state === 'done') {
      this.#stepsReplayed += 1;
      this.#publishCounts(name);
      return;
    }
    const startedAt = clock.now();
    const deadlineName = `${name}${SLEEP_DEADLINE_SUFFIX}`;
    let until = storedDeadline(journal.get(deadlineName)?.result);
    if (until === undefined) {
      until = startedAt + ms;
      // The wake-up time is stored before waiting: a resumed run waits only for what is left.
      journal.record({ name: deadlineName, state: 'done', result: { until }, startedAt, endedAt: startedAt });
    }
    this.#deps.updateDetail({ currentStep: name, sleepingUntil: until });
    this.#stall.pause();
    try {
      await delay(
        clock,
        Math.min(MAX_TIMER_DELAY_MS, Math.max(0, until - clock.now())),
        this.#controller.signal,
      );
    } finally {
      this.#stall.resume();
      this.#deps.updateDetail({ sleepingUntil: null });
    }
    journal.record({ name, state: 'done', result: null, startedAt, endedAt: clock.now() });
    this.#stepsDone += 1;
    this.#publishCounts(name);
  }

  async #input(name: string, question: string): Promise<string> {
    const { journal, clock } = this.#deps;
    const stored = journal.get(name);
    if (stored?.state === 'done' && typeof stored.result === 'string') {
      this.#stepsReplayed += 1;
      this.#publishCounts(name);
      return stored.result;
    }
    const startedAt = clock.now();
    const answer = new Promise<string>((resolve, reject) => {
      this.#inputs.push({ question, resolve, reject });
    });
    this.#deps.updateDetail({ currentStep: name, waitingForInput: question });
    this.#stall.pause();
    this.#deps.notify({ type: 'input_needed', question });
    let text: string;
    try {
      text = await answer;
    } finally {
      this.#stall.resume();
      this.#deps.updateDetail({ waitingForInput: this.pendingQuestion ?? null });
    }
    const entry = journal.record({ name, state: 'done', result: text, startedAt, endedAt: clock.now() });
    this.#stepsDone += 1;
    this.#publishCounts(name);
    return typeof entry.result === 'string' ? entry.result : text;
  }

  #track(resource: Promise<unknown>): void {
    const tracked = resource.then(
      () => undefined,
      () => undefined,
    );
    this.#resources.add(tracked);
    void tracked.then(() => this.#resources.delete(tracked));
  }
}

function storedDeadline(stored: JsonValue | undefined): number | undefined {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return undefined;
  const until = (stored as Record<string, JsonValue>).until;
  return typeof until === 'number' ? until : undefined;
}

/** Waits `ms` on `clock`; rejects with the signal's reason when it aborts. */
function delay(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      cancel();
      reject(signal.reason);
    };
    const cancel = clock.schedule(ms, () => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
