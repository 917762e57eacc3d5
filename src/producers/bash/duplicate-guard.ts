/**
 * The duplicate guard of the `bash` tool: a background command identical to one still running in the same
 * session — the same command text after normalising whitespace, in the same working directory — is not
 * started again; the call answers with the running task's id instead. A second dev server on the same port,
 * a second watcher doubling the CPU, is almost never what a model meant after it lost track of the first.
 *
 * The check and the reservation are one synchronous step: two calls in the same tick cannot both pass.
 */
import type { Caller, TaskService, TaskSnapshot } from '../../tasks/index.js';
import { bashFacts } from './bash-facts.js';

/** Whitespace runs become one space, and the ends are trimmed: `npm  run dev\n` and `npm run dev` match. */
export function normalizeCommand(command: string): string {
  return command.replace(/\s+/g, ' ').trim();
}

/** What a running command is recognised by. */
function keyOf(command: string, cwd: string): string {
  return `${cwd}\u0000${normalizeCommand(command)}`;
}

function sessionOf(caller: Caller): string {
  return caller !== undefined && 'sessionId' in caller ? caller.sessionId : '';
}

/** A reserved key, held while a start is in flight; `bind` ties it to the task once registered. */
export interface DuplicateReservation {
  bind(taskId: string): void;
  release(): void;
}

export class DuplicateGuard {
  readonly #tasks: TaskService;
  /** Keys of commands this tool started in full (a task's detail keeps only a command's first characters). */
  readonly #keys = new Map<string, string>();
  /** Starts in flight, by session and key. */
  readonly #starting = new Map<string, number>();
  readonly #detailChars: number;

  constructor(tasks: TaskService, detailChars: number) {
    this.#tasks = tasks;
    this.#detailChars = detailChars;
  }

  /**
   * The running task of the caller's session that runs this command in this directory, or `'starting'`
   * when an identical call is starting right now; undefined when there is none — then the key is reserved
   * for this call (release it, or bind it to the new task).
   */
  check(
    caller: Caller,
    command: string,
    cwd: string,
  ): { duplicate: TaskSnapshot | 'starting' } | { reservation: DuplicateReservation } {
    const key = keyOf(command, cwd);
    const session = sessionOf(caller);
    const slot = `${session}\u0000${key}`;
    if ((this.#starting.get(slot) ?? 0) > 0) return { duplicate: 'starting' };
    const running = this.#findRunning(caller, session, key, command);
    if (running !== undefined) return { duplicate: running };
    this.#starting.set(slot, (this.#starting.get(slot) ?? 0) + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = (this.#starting.get(slot) ?? 1) - 1;
      if (left <= 0) this.#starting.delete(slot);
      else this.#starting.set(slot, left);
    };
    return {
      reservation: {
        bind: (taskId) => {
          this.#keys.set(taskId, key);
          release();
        },
        release,
      },
    };
  }

  #findRunning(caller: Caller, session: string, key: string, command: string): TaskSnapshot | undefined {
    let found: TaskSnapshot | undefined;
    const seen = new Set<string>();
    for (const task of this.#tasks.list(caller)) {
      seen.add(task.id);
      if (task.kind !== 'bash' || task.status !== 'running') continue;
      if ((task.ownerSessionId ?? '') !== session) continue;
      if (this.#keyOfTask(task) !== key) continue;
      // The oldest one: the list is oldest first.
      found ??= task;
    }
    // Forget the keys of tasks the service no longer holds.
    for (const id of this.#keys.keys()) if (!seen.has(id)) this.#keys.delete(id);
    // A command longer than a detail keeps matches only through the full keys this guard recorded.
    if (found === undefined && command.length > this.#detailChars) return undefined;
    return found;
  }

  #keyOfTask(task: TaskSnapshot): string | undefined {
    const recorded = this.#keys.get(task.id);
    if (recorded !== undefined) return recorded;
    const facts = bashFacts(task);
    if (typeof facts?.command !== 'string' || typeof facts.cwd !== 'string') return undefined;
    // A detail cut at its limit cannot prove the whole command is the same.
    if (facts.command.length >= this.#detailChars) return undefined;
    return keyOf(facts.command, facts.cwd);
  }
}

/** The answer to a duplicate start: the running task's id, and how to read, stop or really start a copy. */
export function describeDuplicate(running: TaskSnapshot | 'starting', command: string): string {
  const shown = normalizeCommand(command);
  const label = shown.length > 120 ? `${shown.slice(0, 117)}...` : shown;
  if (running === 'starting') {
    return [
      `Not started: an identical command ("${label}") is being started in this directory by another call right now.`,
      'Use the task id that call returns; call again with `allow_duplicate: true` to start a second copy anyway.',
    ].join('\n');
  }
  const pid = typeof running.detail.pid === 'number' ? ` (pid ${running.detail.pid})` : '';
  return [
    `Not started: ${running.id}${pid} is already running this command ("${label}") in this directory.`,
    `Read its output with task_output (task_id "${running.id}"), stop it with task_kill; you will be notified when it ends.`,
    'To start a second copy anyway, call again with `allow_duplicate: true`.',
  ].join('\n');
}
