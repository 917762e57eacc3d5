/**
 * One run of a subagent: resolves the child's model, opens (or re-opens) its child session — the moment
 * the run "publishes" — sends the prompt, forwards messages as user input at the child's turn
 * boundaries, waits until the child is quiet, then releases it: seals its notifications, stops its
 * background work when the run was cancelled (or always, unless work may linger), and closes it.
 * `result` never rejects and settles only after that release.
 */
import type { ModelPort, Session, SessionEvent } from '../../session/index.js';
import { isTerminalStatus } from '../../tasks/index.js';
import type { ModelSource, ResolvedAgentProfile } from './agent-profile.js';
import type { ChildSessions } from './child-sessions.js';
import { SubagentNotAcceptingMessagesError } from './errors.js';
import type { ResolvedSubagentOptions } from './subagent-options.js';
import { type MeteredModel, meterModel, type SubagentUsage } from './usage-meter.js';

/** Why a run ended, as `detail.reason`. */
export type ChildRunReason =
  | 'completed'
  | 'cancelled'
  | 'error'
  | 'max_steps'
  | 'interrupted'
  | 'infrastructure';

/** What a cancelled run's child is interrupted with when the stop gave no reason. */
export const DEFAULT_STOP_REASON = 'the subagent was cancelled';

/** The text a cancel's abort carries: the stop's reason, or the default. */
export function stopReasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.message !== '') return reason.message;
  if (typeof reason === 'string' && reason !== '') return reason;
  return DEFAULT_STOP_REASON;
}

export interface ChildRunResult {
  readonly status: 'completed' | 'killed' | 'failed';
  readonly reason: ChildRunReason;
  /** Why a cancelled run was stopped: the stop's reason, or `DEFAULT_STOP_REASON`. */
  readonly stopReason?: string;
  /** The child's final text (its last non-empty turn text). */
  readonly text: string;
  readonly error?: string;
  readonly usage: SubagentUsage;
  /** Undefined when the run was cancelled (or failed) before the child session was opened. */
  readonly childSessionId: string | undefined;
  /** True when the child session stays open with background work (see `keepBackgroundWork`). */
  readonly lingering: boolean;
}

export interface ChildRunRequest {
  readonly prompt: string;
  readonly parentSessionId: string;
  readonly depth: number;
  readonly profile: ResolvedAgentProfile | undefined;
  readonly resumeSessionId?: string;
  readonly sessionId?: string;
  readonly title?: string;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Aborting it cancels the run, before or after the child is published. */
  readonly signal: AbortSignal;
  /** Called once the child session exists. */
  readonly onPublish?: (childSessionId: string) => void;
  /** Called on every child event (progress for stall detection). */
  readonly onActivity?: () => void;
  /**
   * Called when a completed child keeps background work: the producer closes it once the work ends.
   * Without it, a run always closes its child.
   */
  readonly onLinger?: (child: Session) => void;
}

interface TurnEnd {
  readonly reason: string;
  readonly text: string;
  readonly error: string | undefined;
}

export class ChildRun {
  readonly result: Promise<ChildRunResult>;
  readonly #host: ChildSessions;
  readonly #options: ResolvedSubagentOptions;
  readonly #request: ChildRunRequest;
  readonly #pending: string[] = [];
  readonly #sends = new Set<Promise<unknown>>();
  #sendCount = 0;
  #child: Session | undefined;
  #finishing = false;
  #toolUses = 0;
  #lastText = '';
  #lastTurn: TurnEnd | undefined;

  constructor(host: ChildSessions, options: ResolvedSubagentOptions, request: ChildRunRequest) {
    this.#host = host;
    this.#options = options;
    this.#request = request;
    this.result = this.#execute();
  }

  get childSessionId(): string | undefined {
    return this.#child?.id;
  }

  /**
   * Forwards a message to the child as user input, delivered at its next turn boundary (after the turn
   * it is running). Messages sent before the child is published wait for it. Throws once the run is
   * finishing: nothing would read the message.
   */
  sendMessage(text: string, taskId: string): void {
    if (this.#finishing) throw new SubagentNotAcceptingMessagesError(taskId);
    if (this.#child === undefined) {
      this.#pending.push(text);
      return;
    }
    this.#deliver(this.#child, text);
  }

  #deliver(child: Session, text: string): void {
    this.#sendCount += 1;
    const sent = child.send(text).catch(() => undefined);
    this.#sends.add(sent);
    void sent.finally(() => this.#sends.delete(sent));
  }

  async #execute(): Promise<ChildRunResult> {
    const { signal } = this.#request;
    const startedAt = this.#options.clock.now();
    let meter: MeteredModel | undefined;
    let child: Session | undefined;
    let failure: string | undefined;
    let lingering = false;
    try {
      if (!signal.aborted) {
        // A model that is slow to appear must not hold up a cancel that came before the child existed.
        const model = await untilAborted(
          resolveModel(this.#request.profile?.model ?? this.#options.model),
          signal,
        );
        if (model !== undefined && !signal.aborted) {
          meter = meterModel(model);
          child = this.#publish(meter);
          failure = await this.#converse(child);
        }
      }
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
    } finally {
      this.#finishing = true;
    }
    const status: ChildRunResult['status'] = signal.aborted
      ? 'killed'
      : failure !== undefined
        ? 'failed'
        : (this.#statusOfLastTurn() ?? 'failed');
    if (child !== undefined) lingering = await this.#release(child, status);
    const usage: SubagentUsage = {
      totalTokens: (meter?.inputTokens ?? 0) + (meter?.outputTokens ?? 0),
      inputTokens: meter?.inputTokens ?? 0,
      outputTokens: meter?.outputTokens ?? 0,
      toolUses: this.#toolUses,
      durationMs: Math.max(0, this.#options.clock.now() - startedAt),
    };
    const base = { text: this.#lastText, usage, childSessionId: child?.id, lingering };
    if (status === 'killed')
      return { ...base, status, reason: 'cancelled', stopReason: stopReasonOf(signal) };
    if (failure !== undefined) return { ...base, status: 'failed', reason: 'infrastructure', error: failure };
    if (status === 'completed') return { ...base, status, reason: 'completed' };
    return { ...base, status: 'failed', ...this.#describeFailedTurn() };
  }

  #publish(meter: MeteredModel): Session {
    const request = this.#request;
    const child = this.#host.open({
      parentSessionId: request.parentSessionId,
      depth: request.depth,
      profile: request.profile,
      model: meter.model,
      ...(request.resumeSessionId === undefined ? {} : { resumeSessionId: request.resumeSessionId }),
      ...(request.sessionId === undefined ? {} : { sessionId: request.sessionId }),
      ...(request.title === undefined ? {} : { title: request.title }),
      ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
      ...(request.env === undefined ? {} : { env: request.env }),
    });
    this.#child = child;
    child.on((event) => this.#observe(event));
    request.onPublish?.(child.id);
    return child;
  }

  #observe(event: SessionEvent): void {
    if (event.type === 'tool-call-start') this.#toolUses += 1;
    if (event.type === 'turn-end') {
      this.#lastTurn = { reason: event.reason, text: event.text, error: event.error };
      if (event.text !== '') this.#lastText = event.text;
    }
    try {
      this.#request.onActivity?.();
    } catch (error) {
      this.#options.logger.warn('a subagent activity listener failed', {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /** Runs the conversation until the child is quiet or the run is cancelled; returns a failure, if any. */
  async #converse(child: Session): Promise<string | undefined> {
    const { signal } = this.#request;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<void>((resolve) => {
      onAbort = () => {
        // The child's turn signal carries the stop's reason, so its tools and its record can tell why.
        child.interrupt(stopReasonOf(signal));
        resolve();
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const first = child.send(this.#request.prompt);
      first.catch(() => undefined);
      for (const message of this.#pending.splice(0)) this.#deliver(child, message);
      const outcome = await Promise.race([first.then(() => undefined), aborted]).catch((error: unknown) =>
        error instanceof Error ? error.message : String(error),
      );
      if (typeof outcome === 'string') return outcome;
      // Messages that arrived meanwhile start turns of their own: wait until none is left.
      for (;;) {
        if (signal.aborted) return undefined;
        const sentBefore = this.#sendCount;
        await Promise.race([child.whenIdle(), aborted]);
        await Promise.race([Promise.all([...this.#sends]), aborted]);
        if (signal.aborted) return undefined;
        if (this.#sendCount === sentBefore) {
          this.#finishing = true;
          return undefined;
        }
      }
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  #statusOfLastTurn(): 'completed' | undefined {
    return this.#lastTurn?.reason === 'completed' ? 'completed' : undefined;
  }

  #describeFailedTurn(): { reason: ChildRunReason; error: string } {
    const turn = this.#lastTurn;
    switch (turn?.reason) {
      case 'max_steps':
        return { reason: 'max_steps', error: 'The subagent reached its limit of model requests in one turn' };
      case 'interrupted':
        return { reason: 'interrupted', error: "The subagent's turn was interrupted" };
      case 'error':
        return { reason: 'error', error: turn.error ?? 'The subagent turn failed' };
      default:
        return { reason: 'infrastructure', error: 'The subagent ended without finishing a turn' };
    }
  }

  /**
   * Seals the child (its background work stays quiet from now on), stops that work when the run did not
   * complete, and closes the child — unless it completed, work may linger, and some is still running.
   * Returns whether the child lingers.
   */
  async #release(child: Session, status: ChildRunResult['status']): Promise<boolean> {
    child.seal();
    this.#host.runtime.policyOf(child.id)?.seal();
    const tasks = this.#options.tasks;
    const live = () => tasks.list(child.owner).filter((snapshot) => !isTerminalStatus(snapshot.status));
    if (status === 'killed') {
      // A cancelled subagent's background work is cancelled with it.
      await Promise.all(
        live().map((snapshot) =>
          tasks
            .kill(snapshot.id, child.owner, 'the subagent that started it was cancelled', {
              initiator: 'system',
            })
            .catch(() => undefined),
        ),
      );
    }
    if (
      status === 'completed' &&
      this.#options.keepBackgroundWork &&
      this.#request.onLinger &&
      live().length > 0
    ) {
      this.#request.onLinger(child);
      return true;
    }
    await child.close();
    this.#host.forget(child.id);
    return false;
  }
}

async function resolveModel(source: ModelSource): Promise<ModelPort> {
  return typeof source === 'function' ? await source() : source;
}

/** The value, or undefined as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
