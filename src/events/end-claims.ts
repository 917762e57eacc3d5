/**
 * Who took each ended task's delivery claim, as far as the task service's change feed shows it. The
 * delivery policy claims inside the settlement itself and queues its notification a moment later (after
 * reading the output tail); the ledger cannot show that moment, so the feed remembers it here: the first
 * claim of an end that nobody had taken is the notifier's, and its notification is on its way.
 */
import { isTerminalStatus, type TaskSnapshot } from '../tasks/index.js';

/**
 * `unclaimed`: nobody took the end yet. `notifying`: the notifier took it and has queued nothing yet.
 * `settled`: the end was taken otherwise (a waiter, a teardown), or the notifier is done with it.
 */
type EndClaim = 'unclaimed' | 'notifying' | 'settled';

interface Entry {
  readonly attempt: number;
  readonly claim: EndClaim;
  /** When the claim reached this state (the feed's clock). */
  readonly since: number;
}

function nextClaim(previous: EndClaim | undefined, task: TaskSnapshot): EndClaim {
  // Taken when the end was first seen: a waiter (the call's own result, `task_kill`, `task_output` with `wait`).
  if (previous === undefined) return task.reported ? 'settled' : 'unclaimed';
  if (previous === 'unclaimed' && task.reported) return 'notifying';
  // The claim came back (the queue refused it): nobody is queueing it now.
  if (previous === 'notifying' && !task.reported) return 'settled';
  return previous;
}

export class EndClaims {
  readonly #now: () => number;
  /** Ended tasks by id, for the attempt seen last; live ones have no entry. */
  readonly #entries = new Map<string, Entry>();

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Follows a snapshot of the task (each change, in order). */
  observe(task: TaskSnapshot): void {
    if (!isTerminalStatus(task.status)) {
      this.#entries.delete(task.id);
      return;
    }
    const current = this.#entries.get(task.id);
    const previous = current?.attempt === task.attempt ? current.claim : undefined;
    const claim = nextClaim(previous, task);
    if (claim !== previous) this.#entries.set(task.id, { attempt: task.attempt, claim, since: this.#now() });
  }

  /** The notifier holds this end's claim and has queued nothing yet. */
  notifying(task: TaskSnapshot): boolean {
    const entry = this.#entries.get(task.id);
    return entry?.attempt === task.attempt && entry.claim === 'notifying';
  }

  /** The ledger spoke about this task (queued, refused, discarded): it says the rest. */
  settle(taskId: string): void {
    const entry = this.#entries.get(taskId);
    if (entry?.claim === 'notifying') this.#entries.set(taskId, { ...entry, claim: 'settled' });
  }

  /** Settles the claims held for `afterMs` or longer without the ledger saying anything. */
  expire(afterMs: number): void {
    const now = this.#now();
    for (const [taskId, entry] of this.#entries) {
      if (entry.claim === 'notifying' && now - entry.since >= afterMs) {
        this.#entries.set(taskId, { ...entry, claim: 'settled' });
      }
    }
  }

  forget(taskId: string): void {
    this.#entries.delete(taskId);
  }
}
