/**
 * The MCP task store backed by Errand (MCP Tasks, spec 2025-11-25, the SDK's experimental `TaskStore`).
 * An MCP task created by a task-augmented `bash` call is bound to the Errand task running the command:
 * `tasks/get` reads the Errand task's real status, `tasks/cancel` stops it through the stop dispatch
 * (initiator `user`) and waits for its process tree to be gone, `tasks/result` returns its output and
 * exit line. Reading a finished task's result with `tasks/result` is the model learning how it ended, as
 * with `task_output`: it takes the task's delivery claim and discards its queued notification (through
 * `reportEnd`), so no `<task-notification>` repeats it. `tasks/get` and status notifications are a side
 * channel and claim nothing. Records are bounded in number and expire `ttl` after they finish.
 *
 * An ordinary (not task-augmented) call of a tool that supports tasks reaches the SDK's automatic
 * polling, which also creates a task; such a task is "inline": it is hidden from `tasks/get` and
 * `tasks/list`, completed by the tool's ordinary result, and forgotten once that result is collected.
 */
import { randomUUID } from 'node:crypto';
import type {
  CreateTaskOptions,
  TaskStore,
} from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type {
  CallToolResult,
  Task as McpTask,
  TaskStatus as McpTaskStatus,
  Request,
  RequestId,
  Result,
} from '@modelcontextprotocol/sdk/types.js';
import {
  type Disposer,
  isTerminalStatus,
  type Owner,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import type { StopDispatch } from '../tools/index.js';
import {
  type CommandOutput,
  describeTaskStatus,
  mcpTaskStatusOf,
  renderBashTaskResult,
} from './bash-task-result.js';
import {
  McpInvalidCursorError,
  McpTaskLimitError,
  McpTaskNotFinishedError,
  McpTaskNotFoundError,
} from './errors.js';
import {
  type ErrandTaskStoreOptions,
  errandTaskStoreOptions,
  type ResolvedErrandTaskStoreOptions,
} from './task-store-options.js';

export interface ErrandTaskStoreDependencies {
  readonly tasks: TaskService;
  /** The session the MCP connection acts for: Errand tasks are read and stopped as this owner. */
  readonly owner: Owner;
  /** The stop dispatch `tasks/cancel` goes through. */
  readonly stop: StopDispatch;
  /** The output of a bash task (its process handle), while the producer still holds it. */
  readonly outputOf: (taskId: string) => CommandOutput | undefined;
  /** Told when a bound task reaches a terminal MCP status by itself (for `notifications/tasks/status`). */
  readonly onStatusChange?: (task: McpTask) => void;
  /**
   * Told when `tasks/result` handed a finished Errand task's result to the client: the session's inbox
   * discards that end's notification (`session.inbox.markTold`).
   */
  readonly reportEnd?: (end: { readonly taskId: string; readonly attempt: number }) => void;
}

interface TaskRecord {
  readonly taskId: string;
  readonly createdAt: number;
  lastUpdatedAt: number;
  readonly ttl: number;
  readonly pollInterval: number;
  readonly inline: boolean;
  /**
   * The end belongs to the task alone (a task the Tasks extension created): it is claimed the moment
   * the command ends, so no `<task-notification>` repeats what the client reads through `tasks/get`.
   */
  readonly endThroughTask: boolean;
  /** Questions its command asked (`errand ask`) that the client has not answered, by input-request key. */
  readonly questions: Map<string, PendingQuestion>;
  errandTaskId: string | undefined;
  /** The attempt of the Errand task whose end the result shows (set when it settles from one). */
  errandAttempt: number | undefined;
  status: McpTaskStatus;
  statusMessage: string | undefined;
  result: Result | undefined;
  endedAt: number | undefined;
  cancelRequested: boolean;
  readonly settled: Promise<void>;
  readonly settle: () => void;
}

/** The client's answer to a question a command asked. */
export type QuestionAnswer =
  | { readonly action: 'accept'; readonly answer: string }
  | { readonly action: 'decline' | 'cancel' };

interface PendingQuestion {
  /** The `elicitation/create` request the client sees in `inputRequests`. */
  readonly request: Record<string, unknown>;
  readonly settle: (answer: QuestionAnswer) => void;
}

/** A question as a form elicitation with one string field, `answer`. */
function elicitationOf(question: string): Record<string, unknown> {
  return {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: question,
      requestedSchema: {
        type: 'object',
        properties: { answer: { type: 'string', description: 'The answer the command waits for' } },
        required: ['answer'],
      },
    },
  };
}

const TERMINAL: ReadonlySet<McpTaskStatus> = new Set(['completed', 'failed', 'cancelled']);

export class ErrandTaskStore implements TaskStore {
  readonly options: ResolvedErrandTaskStoreOptions;
  readonly #dependencies: ErrandTaskStoreDependencies;
  /** In creation order, which is also the `tasks/list` order. */
  readonly #records = new Map<string, TaskRecord>();
  /** Errand task id → MCP task id. */
  readonly #byErrandTask = new Map<string, string>();
  readonly #unsubscribe: Disposer;
  #disposed = false;

  constructor(dependencies: ErrandTaskStoreDependencies, options: ErrandTaskStoreOptions = {}) {
    this.options = errandTaskStoreOptions.resolve(options);
    this.#dependencies = dependencies;
    this.#unsubscribe = dependencies.tasks.onTaskDone((snapshot) => this.#onTaskDone(snapshot), {
      owner: dependencies.owner,
    });
  }

  /** MCP tasks held now (inline ones included). */
  get size(): number {
    return this.#records.size;
  }

  // ---------------------------------------------------------------- the SDK's TaskStore

  async createTask(
    taskParams: CreateTaskOptions,
    _requestId: RequestId,
    request: Request,
    _sessionId?: string,
  ): Promise<McpTask> {
    const now = this.options.now();
    this.#sweep(now);
    const inline = !isTaskAugmented(request);
    if (!inline) this.#makeRoom();
    const requested = taskParams.ttl;
    const ttl =
      typeof requested === 'number' && Number.isFinite(requested) && requested >= 0
        ? Math.min(Math.floor(requested), this.options.maxTtlMs)
        : this.options.defaultTtlMs;
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const record: TaskRecord = {
      taskId: randomUUID(),
      createdAt: now,
      lastUpdatedAt: now,
      ttl,
      pollInterval: this.options.pollIntervalMs,
      inline,
      endThroughTask: !inline && endsThroughTask(request),
      questions: new Map(),
      errandTaskId: undefined,
      errandAttempt: undefined,
      status: 'working',
      statusMessage: undefined,
      result: undefined,
      endedAt: undefined,
      cancelRequested: false,
      settled,
      settle,
    };
    this.#records.set(record.taskId, record);
    return toTask(record);
  }

  async getTask(taskId: string, _sessionId?: string): Promise<McpTask | null> {
    this.#sweep(this.options.now());
    const record = this.#visible(taskId);
    if (!record) return null;
    this.#refresh(record);
    return toTask(record);
  }

  async storeTaskResult(
    taskId: string,
    status: 'completed' | 'failed',
    result: Result,
    _sessionId?: string,
  ): Promise<void> {
    const record = this.#require(taskId);
    this.#finish(record, status, result, record.statusMessage);
  }

  async getTaskResult(taskId: string, _sessionId?: string): Promise<Result> {
    const record = this.#records.get(taskId);
    if (!record) throw new McpTaskNotFoundError(taskId);
    this.#refresh(record);
    if (record.result === undefined && record.cancelRequested) {
      // Cancelled but its process tree is not gone yet: the result follows once it is.
      await waitAtMost(record.settled, this.options.cancelSettleMs);
      this.#refresh(record);
    }
    if (record.result === undefined) throw new McpTaskNotFinishedError(taskId);
    // An inline task's result is the ordinary tool result: handed out once, then forgotten.
    if (record.inline) this.#records.delete(taskId);
    else this.#claimEnd(record);
    return record.result;
  }

  async updateTaskStatus(
    taskId: string,
    status: McpTaskStatus,
    statusMessage?: string,
    _sessionId?: string,
  ): Promise<void> {
    const record = this.#require(taskId);
    this.#refresh(record);
    if (TERMINAL.has(record.status)) return;
    if (status === 'cancelled' && record.errandTaskId !== undefined) {
      await this.#cancel(record, statusMessage);
      return;
    }
    record.status = status;
    record.statusMessage = statusMessage ?? record.statusMessage;
    record.lastUpdatedAt = this.options.now();
    if (TERMINAL.has(status)) this.#end(record);
  }

  async listTasks(cursor?: string, _sessionId?: string): Promise<{ tasks: McpTask[]; nextCursor?: string }> {
    this.#sweep(this.options.now());
    const visible = [...this.#records.values()].filter((record) => !record.inline);
    let start = 0;
    if (cursor !== undefined) {
      const index = visible.findIndex((record) => record.taskId === cursor);
      if (index < 0) throw new McpInvalidCursorError(cursor);
      start = index + 1;
    }
    const page = visible.slice(start, start + this.options.listPageSize);
    for (const record of page) this.#refresh(record);
    const last = page.at(-1);
    const more = start + page.length < visible.length;
    return more && last ? { tasks: page.map(toTask), nextCursor: last.taskId } : { tasks: page.map(toTask) };
  }

  // ---------------------------------------------------------------- Errand's side

  /** Whether `taskId` was created for an ordinary (not task-augmented) call. */
  isInline(taskId: string): boolean {
    return this.#records.get(taskId)?.inline === true;
  }

  /** Completes an inline task with the tool's ordinary result. */
  completeInline(taskId: string, result: CallToolResult): McpTask {
    const record = this.#require(taskId, true);
    this.#finish(record, 'completed', result, undefined);
    return toTask(record);
  }

  /** Binds an MCP task to the Errand task that runs its command. */
  bind(taskId: string, errandTaskId: string): McpTask {
    const record = this.#require(taskId);
    record.errandTaskId = errandTaskId;
    this.#byErrandTask.set(errandTaskId, taskId);
    this.#refresh(record);
    return toTask(record);
  }

  /** Ends an MCP task whose command never became an Errand task (invalid input, a refused start). */
  fail(taskId: string, result: CallToolResult): McpTask {
    const record = this.#require(taskId, true);
    const text = result.content.find((block) => block.type === 'text');
    this.#finish(
      record,
      'failed',
      { ...result, isError: true },
      text?.type === 'text' ? text.text : undefined,
    );
    return toTask(record);
  }

  /** Forgets a task (an inline call that failed before it had a result). */
  forget(taskId: string): void {
    const record = this.#records.get(taskId);
    if (!record) return;
    this.#records.delete(taskId);
    if (record.errandTaskId !== undefined) this.#byErrandTask.delete(record.errandTaskId);
    record.settle();
  }

  /**
   * A command asks its client a question (`errand ask`): `ancestors` are the asking process and its
   * ancestors; the running task whose process is one of them, if the Tasks extension created it, turns
   * `input_required` with the question as an `elicitation/create` input request until `answer` settles
   * it. Undefined when no such task exists (nobody could answer). `signal` withdraws the question.
   */
  ask(
    ancestors: ReadonlySet<number>,
    question: string,
    signal: AbortSignal,
  ): Promise<QuestionAnswer> | undefined {
    const record = this.#recordOfProcess(ancestors);
    if (!record) return undefined;
    const key = randomUUID();
    return new Promise<QuestionAnswer>((resolve) => {
      const settle = (answer: QuestionAnswer) => {
        if (!record.questions.delete(key)) return;
        signal.removeEventListener('abort', onAbort);
        this.#changed(record);
        resolve(answer);
      };
      const onAbort = () => settle({ action: 'cancel' });
      record.questions.set(key, { request: elicitationOf(question), settle });
      signal.addEventListener('abort', onAbort, { once: true });
      this.#changed(record);
    });
  }

  /** The outstanding input requests of a task, by key (empty when none). */
  inputRequestsOf(taskId: string): Record<string, unknown> {
    const record = this.#visible(taskId);
    const requests: Record<string, unknown> = {};
    for (const [key, question] of record?.questions ?? []) requests[key] = question.request;
    return requests;
  }

  /**
   * The client's responses to a task's input requests (`tasks/update`): each outstanding key is settled
   * with its response; keys that are not outstanding are ignored. Throws for an unknown task.
   */
  answer(taskId: string, responses: Readonly<Record<string, unknown>>): void {
    const record = this.#require(taskId);
    for (const [key, response] of Object.entries(responses)) {
      const question = record.questions.get(key);
      if (!question) continue;
      const { action, content } = (response ?? {}) as { action?: unknown; content?: { answer?: unknown } };
      if (action === 'accept' && typeof content?.answer === 'string') {
        question.settle({ action: 'accept', answer: content.answer });
      } else {
        question.settle({ action: action === 'decline' ? 'decline' : 'cancel' });
      }
    }
  }

  /** Stops following Errand tasks and forgets every record. Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#unsubscribe();
    for (const record of this.#records.values()) record.settle();
    this.#records.clear();
    this.#byErrandTask.clear();
  }

  // ---------------------------------------------------------------- internals

  async #cancel(record: TaskRecord, statusMessage: string | undefined): Promise<void> {
    const errandTaskId = record.errandTaskId!;
    record.cancelRequested = true;
    try {
      await this.#dependencies.stop.stopBackgroundTask(errandTaskId, {
        initiator: 'user',
        caller: this.#dependencies.owner,
        reason: statusMessage ?? 'cancelled by the MCP client',
      });
    } catch (error) {
      // The producer could not cancel: the command keeps running, and the task says so.
      record.cancelRequested = false;
      throw error;
    }
    record.lastUpdatedAt = this.options.now();
    await waitAtMost(record.settled, this.options.cancelSettleMs);
    this.#refresh(record);
  }

  /** The running task the Tasks extension created whose process is one of `pids`. */
  #recordOfProcess(pids: ReadonlySet<number>): TaskRecord | undefined {
    for (const [errandTaskId, taskId] of this.#byErrandTask) {
      const record = this.#records.get(taskId);
      if (!record?.endThroughTask || record.result !== undefined) continue;
      try {
        const pid = this.#dependencies.tasks.get(errandTaskId, this.#dependencies.owner).detail.pid;
        if (typeof pid === 'number' && pids.has(pid)) return record;
      } catch {
        // Forgotten meanwhile.
      }
    }
    return undefined;
  }

  /** A question was asked or settled: the status changes, and the client is told. */
  #changed(record: TaskRecord): void {
    record.lastUpdatedAt = this.options.now();
    this.#refresh(record);
    if (record.result === undefined) this.#dependencies.onStatusChange?.(toTask(record));
  }

  /** The client read how the bound task ended: nobody notifies it again. */
  #claimEnd(record: TaskRecord): void {
    const taskId = record.errandTaskId;
    const attempt = record.errandAttempt;
    if (taskId === undefined || attempt === undefined) return;
    try {
      // First come wins: if the delivery policy took the claim first, marking it told below covers it.
      this.#dependencies.tasks.claim(taskId, this.#dependencies.owner);
    } catch {
      // Forgotten meanwhile: its end can no longer be notified either.
    }
    this.#dependencies.reportEnd?.({ taskId, attempt });
  }

  #onTaskDone(snapshot: TaskSnapshot): void {
    const taskId = this.#byErrandTask.get(snapshot.id);
    const record = taskId === undefined ? undefined : this.#records.get(taskId);
    if (!record || record.result !== undefined) return;
    this.#settleFrom(record, snapshot);
    if (!record.inline) this.#dependencies.onStatusChange?.(toTask(record));
  }

  /** Reads the bound Errand task's current status into the record. */
  #refresh(record: TaskRecord): void {
    if (record.errandTaskId === undefined || record.result !== undefined) return;
    let snapshot: TaskSnapshot;
    try {
      snapshot = this.#dependencies.tasks.get(record.errandTaskId, this.#dependencies.owner);
    } catch {
      // Forgotten before its end was seen (it cannot be: the done listener runs first); say so.
      this.#finish(
        record,
        'failed',
        {
          content: [{ type: 'text', text: `Task ${record.errandTaskId} is no longer known to Errand.` }],
          isError: true,
        },
        `${record.errandTaskId} is no longer known`,
      );
      return;
    }
    if (isTerminalStatus(snapshot.status)) {
      this.#settleFrom(record, snapshot);
      return;
    }
    const status =
      record.questions.size > 0 && !record.cancelRequested
        ? 'input_required'
        : mcpTaskStatusOf(snapshot, record.cancelRequested);
    const message = describeTaskStatus(snapshot);
    if (status !== record.status || message !== record.statusMessage) {
      record.status = status;
      record.statusMessage = message;
      record.lastUpdatedAt = this.options.now();
    }
  }

  #settleFrom(record: TaskRecord, snapshot: TaskSnapshot): void {
    record.errandAttempt = snapshot.attempt;
    // Inside the task's settlement, before any tool result can reserve its notification.
    if (record.endThroughTask) this.#claimEnd(record);
    const status = mcpTaskStatusOf(snapshot, record.cancelRequested);
    const result = renderBashTaskResult(
      snapshot,
      this.#dependencies.outputOf(snapshot.id),
      status,
      this.options.maxResultBytes,
    );
    this.#finish(record, status, result, describeTaskStatus(snapshot));
  }

  #finish(
    record: TaskRecord,
    status: McpTaskStatus,
    result: Result,
    statusMessage: string | undefined,
  ): void {
    record.status = status;
    record.result = result;
    record.statusMessage = statusMessage;
    record.lastUpdatedAt = this.options.now();
    this.#end(record);
  }

  #end(record: TaskRecord): void {
    record.endedAt ??= this.options.now();
    for (const question of record.questions.values()) question.settle({ action: 'cancel' });
    record.questions.clear();
    if (record.errandTaskId !== undefined) this.#byErrandTask.delete(record.errandTaskId);
    record.settle();
  }

  #visible(taskId: string): TaskRecord | undefined {
    const record = this.#records.get(taskId);
    return record && !record.inline ? record : undefined;
  }

  #require(taskId: string, includeInline = false): TaskRecord {
    const record = includeInline ? this.#records.get(taskId) : this.#visible(taskId);
    if (!record) throw new McpTaskNotFoundError(taskId);
    return record;
  }

  /** Drops finished tasks whose ttl has passed since they finished. */
  #sweep(now: number): void {
    for (const [taskId, record] of this.#records) {
      if (record.inline || record.endedAt === undefined) continue;
      if (now - record.endedAt >= record.ttl) this.#records.delete(taskId);
    }
  }

  /** Drops the oldest finished task when every slot is taken; refuses when all of them are running. */
  #makeRoom(): void {
    const visible = [...this.#records.values()].filter((record) => !record.inline);
    if (visible.length < this.options.maxTasks) return;
    for (const record of visible) this.#refresh(record);
    const oldestFinished = visible.find((record) => record.endedAt !== undefined);
    if (!oldestFinished) throw new McpTaskLimitError(this.options.maxTasks);
    this.#records.delete(oldestFinished.taskId);
  }
}

export function createErrandTaskStore(
  dependencies: ErrandTaskStoreDependencies,
  options?: ErrandTaskStoreOptions,
): ErrandTaskStore {
  return new ErrandTaskStore(dependencies, options);
}

/**
 * The `_meta` key of a task-augmented `tools/call` whose end is read through the task only (the
 * 2026-07-28 Tasks extension's endpoint sets it on the calls it forwards).
 */
export const END_THROUGH_TASK_META = 'errand/endThroughTask';

function endsThroughTask(request: Request): boolean {
  const meta = (request.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  return meta?.[END_THROUGH_TASK_META] === true;
}

function isTaskAugmented(request: Request): boolean {
  const params = request.params as { task?: unknown } | undefined;
  return params?.task !== undefined && params.task !== null;
}

function toTask(record: TaskRecord): McpTask {
  return {
    taskId: record.taskId,
    status: record.status,
    ttl: record.ttl,
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(record.lastUpdatedAt).toISOString(),
    pollInterval: record.pollInterval,
    ...(record.statusMessage === undefined ? {} : { statusMessage: record.statusMessage }),
  };
}

function waitAtMost(promise: Promise<void>, milliseconds: number): Promise<void> {
  if (milliseconds === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, milliseconds);
    void promise.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
