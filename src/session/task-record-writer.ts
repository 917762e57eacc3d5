/**
 * Keeps the store's task records in step with the registry, so a restart still knows what ran and a
 * viewer in another process sees it: every change but a detail update, and a detail update only when the
 * pid or the output file changed (never per byte: a viewer reads the byte count off the file).
 *
 * A record's `reported` (the stored name of *told*) says the ending needs no telling any more. For the two claimants that tell the
 * model — the delivery policy, and a tool inside the session's own turn — it is written with what shows
 * it (the delivery of the notification, the stored tool result), not when the claim is taken: a crash in
 * between leaves it untold, and a resume tells it. A finished record is written untold unless the
 * session is being torn down (closing, sealed, the runtime disposed: endings a teardown causes are never
 * told). Any other claim taken with `claim` or a read (a superseded workflow run, an MCP client's
 * `task_output`) is written at once, and a returned claim too. A claim a waiter takes as the task settles
 * is not written: the waiter may be a tool in a turn (`task_output` with `wait`), whose result writes it;
 * a host's own `tasks.wait` therefore leaves the ending to be told after a resume.
 *
 * A running command's pid, start time and output file wait for its next write, up to
 * `limits.processFactsDelayMs`, when its record already holds the tree's tag and status file: a command
 * that ends sooner writes them with its ending only, and a restart in between recognises its tree by the
 * tag and finds its output beside the status file. A durable command's are written at once: re-attaching
 * it needs its pid.
 */
import { outputFileBeside } from '../process/index.js';
import { type JsonObject, jsonCopy } from '../store/json.js';
import type { StoredTask } from '../store/records.js';
import type { SessionStore, TaskRecordInput, TransactionOptions } from '../store/session-store.js';
import { taskRecordFromSnapshot } from '../store/task-record-from-snapshot.js';
import {
  type Caller,
  type CancelTimer,
  type Clock,
  createTrustedCaller,
  describeError,
  ErrandError,
  isTerminalStatus,
  type Logger,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import type { PendingStoreWrites } from './pending-store-writes.js';

const writerCaller = createTrustedCaller('session-runtime');

/** What the writer asks of the session that owns a task. */
export interface RecordedSession {
  /** True when the caller runs inside the session's own turn (a tool): its result writes the claim. */
  calledFromOwnTurn(): boolean;
  /** Closing, sealed, or its runtime disposed: endings caused by a teardown are never told. */
  tornDown(): boolean;
  /** True once the model read this attempt's ending (a delivery, a tool result). */
  wasTold(end: { readonly taskId: string; readonly attempt?: number | undefined }): boolean;
}

export interface TaskRecordWriterContext {
  /** The open session that owns tasks of `sessionId`; undefined: its records are not kept here. */
  sessionOf(sessionId: string): RecordedSession | undefined;
  /** Where the records go, kept and retried while the store refuses them. */
  readonly store: Pick<SessionStore, 'upsertTask'>;
  readonly pending: Pick<PendingStoreWrites, 'write'>;
  /** The clock a pid's write waits on, and how long (`limits.processFactsDelayMs`; 0: never waits). */
  readonly clock: Clock;
  readonly processFactsDelayMs: number;
  readonly logger: Logger;
}

export class TaskRecordWriter {
  readonly #context: TaskRecordWriterContext;
  readonly #tasks: TaskService;
  /** Per task (session and id): the viewer facts last persisted, so a detail update writes only when they change. */
  readonly #persisted = new Map<string, PersistedFacts>();
  /** Per task: the write of its pid, start time and output file, while they wait. */
  readonly #factsWrites = new Map<string, CancelTimer>();
  /** True while a delivery policy takes a claim (see `policyTasks`). */
  #policyClaiming = false;
  /** The task service as the delivery policies see it: their claims are told apart from any other. */
  readonly policyTasks: TaskService;

  constructor(tasks: TaskService, context: TaskRecordWriterContext) {
    this.#tasks = tasks;
    this.#context = context;
    this.policyTasks = new Proxy(tasks, {
      get: (target, property) => {
        if (property === 'claim') {
          return (id: string, caller?: Caller) => {
            this.#policyClaiming = true;
            try {
              return target.claim(id, caller);
            } finally {
              this.#policyClaiming = false;
            }
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  /** A change the registry announced (`onTasksChanged`): the task's record follows it. */
  record(reason: string, task: TaskSnapshot): void {
    if (task.ownerSessionId === undefined) return;
    const key = `${task.ownerSessionId}\u0000${task.id}`;
    if (reason === 'removed') {
      this.#persisted.delete(key);
      this.#cancelFactsWrite(key);
      return;
    }
    const session = this.#context.sessionOf(task.ownerSessionId);
    if (session === undefined) return;
    const claim = reason === 'claimed' || reason === 'unclaimed';
    if (claim) {
      if (!isTerminalStatus(task.status)) return;
      // The policy's claim is written with the delivery of its notification, and one taken inside the
      // session's own turn with the tool result that showed the end: that is when the model sees it.
      if (reason === 'claimed' && (this.#policyClaiming || session.calledFromOwnTurn())) return;
    }
    const ended = isTerminalStatus(task.status);
    // A durable task its runtime let go of at exit runs on: its record stays live for the next resume.
    if (ended && task.detail.detached === true) return;
    const facts = viewerFacts(task.detail);
    if (reason === 'updated' || reason === FACTS_DUE) {
      if (ended) return;
      const written = this.#persisted.get(key);
      if (written?.eager === facts.eager) {
        if (written.process === facts.process) return;
        if (reason === 'updated' && this.#factsCanWait(task)) {
          this.#writeFactsLater(key, task.id);
          return;
        }
      }
    }
    this.#cancelFactsWrite(key);
    if (ended) this.#persisted.delete(key);
    else this.#persisted.set(key, facts);
    const record = {
      ...taskRecordFromSnapshot(task),
      // Any other claimant (a read outside a turn, a superseded workflow run) means nobody is to be told.
      reported: claim ? reason === 'claimed' : ended && session.tornDown() && task.reported,
    };
    try {
      // Kept and retried while the store refuses writes; told to the model meanwhile, it is written told. A
      // record nobody was told is written with deferred durability: what tells it (a delivery, a tool result)
      // syncs it. One the model was told is synced at once, so it is never told again.
      this.#context.pending.write(`task:${key}`, () => {
        const told =
          record.reported || (ended && session.wasTold({ taskId: task.id, attempt: task.attempt }));
        return upsertAsJson(
          this.#context.store,
          told ? { ...record, reported: true } : record,
          told ? IMMEDIATE : DEFERRED,
        );
      });
    } catch (error) {
      this.#context.logger.warn(`task ${task.id}: persisting its record failed`, {
        error: describeError(error),
      });
    }
  }

  /** Cancels the writes still waiting (the runtime is disposed): each task's last write carried what there was. */
  dispose(): void {
    for (const cancel of this.#factsWrites.values()) cancel();
    this.#factsWrites.clear();
  }

  /**
   * Whether a task's pid and output file may wait for its next write: its stored record recognises the
   * tree by its tag, and its output file is found beside its status file.
   */
  #factsCanWait(task: TaskSnapshot): boolean {
    const detail = task.detail;
    return (
      this.#context.processFactsDelayMs > 0 &&
      detail.durable !== true &&
      typeof detail.processTag === 'string' &&
      typeof detail.statusFile === 'string' &&
      (typeof detail.outputFile !== 'string' || outputFileBeside(detail.statusFile) === detail.outputFile)
    );
  }

  #writeFactsLater(key: string, taskId: string): void {
    if (this.#factsWrites.has(key)) return;
    const cancel = this.#context.clock.schedule(this.#context.processFactsDelayMs, () => {
      if (this.#factsWrites.get(key) !== cancel) return;
      this.#factsWrites.delete(key);
      let task: TaskSnapshot;
      try {
        task = this.#tasks.get(taskId, writerCaller);
      } catch {
        return; // Forgotten: its last write carried what there was.
      }
      this.record(FACTS_DUE, task);
    });
    this.#factsWrites.set(key, cancel);
  }

  #cancelFactsWrite(key: string): void {
    const cancel = this.#factsWrites.get(key);
    if (cancel === undefined) return;
    this.#factsWrites.delete(key);
    cancel();
  }
}

/**
 * Writes a task's record with its detail as the producer published it. Facts JSON cannot hold as they are
 * (a Date, NaN, a class instance), which the store refuses, are written as their JSON copy instead: what
 * `JSON.stringify` keeps of them.
 */
function upsertAsJson(
  store: Pick<SessionStore, 'upsertTask'>,
  record: TaskRecordInput,
  options: TransactionOptions,
): StoredTask {
  try {
    return store.upsertTask(record, options);
  } catch (error) {
    if (!refusedDetail(error)) throw error;
    return store.upsertTask({ ...record, detail: (jsonCopy(record.detail) ?? {}) as JsonObject }, options);
  }
}

function refusedDetail(error: unknown): boolean {
  if (!ErrandError.hasCode(error, 'INVALID_ARGUMENT')) return false;
  const field = error.context?.field;
  return typeof field === 'string' && /^detail(?:$|[.[])/.test(field);
}

/**
 * What of a task's detail a viewer or a later runtime reads off its record, so a detail update writes
 * only when it changes: `process` (the pid, start time and output file) may wait for the next write.
 */
interface PersistedFacts {
  readonly eager: string;
  readonly process: string;
}

function viewerFacts(detail: TaskSnapshot['detail']): PersistedFacts {
  return {
    eager: [detail.statusFile, detail.readOffset, detail.processTag, detail.bootId]
      .map(String)
      .join('\u0000'),
    process: [detail.pid, detail.processStartTime, detail.outputFile].map(String).join('\u0000'),
  };
}

/** The reason `record` is called with when a task's waiting process facts are due. */
const FACTS_DUE = 'process_facts_due';

/** The durability of the records nobody was told yet (`SessionStore.transaction`). */
const DEFERRED = { durability: 'deferred' } as const;
const IMMEDIATE = { durability: 'immediate' } as const;
