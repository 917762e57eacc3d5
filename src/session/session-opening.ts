/**
 * Opening a session against the store: a new one is created and held; a stored one is held, takes back
 * what its last runtime left (queued notifications, live task records judged by `reconcile`), and opens
 * again. Either way a failure part-way leaves no session behind that looks open or held by this runtime.
 */
import type { SessionStore } from '../store/session-store.js';
import type { SessionId } from '../tasks/index.js';
import { type ReconcileContext, reconcileSessionTasks } from './reconcile.js';
import type { ResidentSession } from './resident-sessions.js';
import { takeQueuedResidue } from './resume-residue.js';
import { SessionNotFoundError } from './session-errors.js';
import { holderFor, isHolderLive } from './session-holder.js';

/** What a session is opened with, once its record exists and this runtime holds it. */
export interface OpenRequest {
  readonly id: SessionId;
  readonly parentId: SessionId | undefined;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>> | undefined;
  readonly branchGeneration: number;
}

export interface NewSessionRequest {
  readonly id: SessionId;
  readonly parentId: SessionId | undefined;
  readonly cwd: string;
  readonly title: string | undefined;
  readonly env: Readonly<Record<string, string>> | undefined;
}

export interface SessionOpeningContext {
  readonly store: SessionStore;
  /** This runtime's instance id: the holder it records, and clears after a failed opening. */
  readonly instanceId: string;
  /** Epoch milliseconds, for the holder's `acquiredAt`. */
  readonly now: () => number;
  /** What `reconcile` judges a dead runtime's live records with. */
  reconcile(): ReconcileContext;
  /** Wires the opened session to its policy and the runtime, and makes it resident. */
  open(request: OpenRequest): ResidentSession;
}

/** A resumed session, and the tasks whose notification went back into its queue. */
export interface ResumedSession {
  readonly resident: ResidentSession;
  readonly requeued: ReadonlySet<string>;
}

export class SessionOpening {
  readonly #context: SessionOpeningContext;

  constructor(context: SessionOpeningContext) {
    this.#context = context;
  }

  /** Creates the session's record, holds it, and opens it. */
  create(request: NewSessionRequest): ResidentSession {
    const { store } = this.#context;
    const { parentId, cwd, title, env } = request;
    const record = store.createSession({
      id: request.id,
      ...(parentId ? { parentId } : {}),
      cwd,
      ...(title ? { title } : {}),
    });
    try {
      this.#hold(record.id);
      return this.#context.open({
        id: record.id,
        parentId,
        cwd,
        env,
        branchGeneration: record.branchGeneration,
      });
    } catch (error) {
      // A tools or model factory that throws leaves no session behind that looks open, or held.
      try {
        store.updateSession(record.id, { state: 'closed' });
      } catch {
        // The original error says more.
      }
      this.#release(record.id);
      throw error;
    }
  }

  /**
   * Holds a stored session (`SESSION_IN_USE` while a live runtime holds it), takes back its queued
   * notifications, settles its last runtime's live task records with the truth, and opens it. The taken-
   * over tasks are re-registered for the new owner once it is open.
   */
  resume(id: SessionId, env: Readonly<Record<string, string>> | undefined): ResumedSession {
    const { store } = this.#context;
    const record = store.getSession(id);
    if (!record) throw new SessionNotFoundError(id);
    // Before anything is discarded or marked lost: a runtime that still has it open keeps it (SESSION_IN_USE).
    this.#hold(id);
    let residue: ReturnType<typeof takeQueuedResidue>;
    let reconciled: ReturnType<typeof reconcileSessionTasks>;
    let resident: ResidentSession;
    try {
      residue = takeQueuedResidue(store, id);
      // Checked, never assumed: what still runs is taken over, what ended is settled with the truth.
      reconciled = reconcileSessionTasks(id, this.#context.reconcile());
      store.markLiveAsLost({ sessionId: id, error: LOST_ON_RESUME_ERROR, keepTaskIds: reconciled.kept });
      if (record.state === 'closed') store.updateSession(id, { state: 'active' });
      resident = this.#context.open({
        id,
        parentId: record.parentId,
        cwd: record.cwd,
        env,
        branchGeneration: record.branchGeneration,
      });
    } catch (error) {
      // Not opened here: another runtime may resume it.
      this.#release(id);
      throw error;
    }
    resident.session.restoreNotifications(residue);
    reconciled.adopt(resident.session.owner);
    const requeued = new Set(
      residue.filter((notification) => notification.ending !== false).map((entry) => entry.taskId),
    );
    return { resident, requeued };
  }

  #hold(id: SessionId): void {
    this.#context.store.acquireSession(
      id,
      holderFor(this.#context.instanceId, this.#context.now()),
      isHolderLive,
    );
  }

  /** Clears this runtime's holder of a session it failed to open (a no-op when another runtime holds it). */
  #release(id: SessionId): void {
    try {
      this.#context.store.releaseSession(id, this.#context.instanceId);
    } catch {
      // The original error says more; a holder left behind is stale once this runtime is disposed.
    }
  }
}

/**
 * The diagnosis of a task without a process of its own (a subagent, a workflow run) found running when
 * its session is resumed: it ran inside the runtime that stopped, so it ended with it.
 */
const LOST_ON_RESUME_ERROR =
  'The runtime that ran this task stopped; the task ran inside it, so it ended with it, and its result is unknown.';
