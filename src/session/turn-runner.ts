/**
 * Runs a session's turns one at a time: delivers what the turn carries (reserved notifications, a
 * person's input) through the inbox and the ledger, runs the turn loop in the turn's frame, and answers
 * with the outcome. The frame lets the session tell that a caller (a tool, or anything it started) runs
 * inside its own turn, which a close or a configuration from there must not wait for.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { MessageRecord } from '../store/records.js';
import type { NewMessage } from '../store/session-store.js';
import { describeError, ErrandError, type Logger } from '../tasks/index.js';
import type { AnyToolDefinition, ToldTaskEnd, ToolContext } from '../tools/index.js';
import type { Tracing } from '../tracing/index.js';
import type { QueuedUserInput } from './command-queue.js';
import type { ModelMessage, ModelPort } from './model-port.js';
import { NOTIFICATION_DELIVERY_FAILED } from './notification-delivery-error.js';
import type { NotificationInbox, NotificationReservation } from './notification-inbox.js';
import type { SessionEvent, TurnOutcome, TurnSource } from './session-events.js';
import type { SessionLedger } from './session-ledger.js';
import type { ResolvedSessionLimits } from './session-limits.js';
import { runTurn, type TurnContext } from './turn-loop.js';

/** The `source` of the message that delivers notifications mid-turn or ahead of a person's input. */
export const STEER_SOURCE = 'task_notification_steer';
/** The `source` of the message that delivers the batch an idle turn starts for. */
export const BACKGROUND_TURN_SOURCE = 'background_task';

/** What the runner needs from its session. */
/** What a turn asks the model with: the model, the system prompt, the tools, and how calls and inputs look. */
export interface TurnAgent {
  model(): ModelPort;
  system(): string | undefined;
  tools(): readonly AnyToolDefinition[];
  toolContext(toolCallId: string, signal: AbortSignal): ToolContext;
  /** A person's input as it is delivered (after the user-prompt hook). */
  beforeUserPrompt(text: string): string;
}

/** The conversation a turn reads and writes (see `TurnContext`). */
export interface TurnTranscript {
  /** The live conversation in the model's shapes (a fresh array). */
  modelMessages(): ModelMessage[];
  append(message: NewMessage): MessageRecord;
  /** Appends tool results and records the task ends they show, in one write (see `TurnContext`). */
  appendToolResults(message: NewMessage, ends: readonly ToldTaskEnd[]): MessageRecord;
  /** See `TurnContext.durable`. */
  durable(): Promise<void>;
  /** See `TurnContext.persistenceNote`. */
  persistenceNote(): string | undefined;
}

/** The session's state as its turns change and read it. */
export interface TurnStatus {
  emit(event: SessionEvent): void;
  /** The session runs a turn (`running`) or is idle again (`idle`, not sent once shutdown began). */
  setState(state: 'running' | 'idle'): void;
  isClosing(): boolean;
}

export interface TurnRunnerContext {
  readonly sessionId: string;
  readonly logger: Logger;
  readonly limits: ResolvedSessionLimits;
  /** Where the turn's `invoke_agent` span, its model calls and its tool calls go. */
  readonly tracing: Tracing;
  /** Where a turn's notifications are reserved and delivered. */
  readonly inbox: Pick<NotificationInbox, 'reserveForTurn' | 'deliverReserved'>;
  /** Where a person's input is delivered, or discarded when its delivery failed. */
  readonly ledger: Pick<SessionLedger, 'deliverInput' | 'discardEntries'>;
  readonly agent: TurnAgent;
  readonly transcript: TurnTranscript;
  readonly status: TurnStatus;
}

/**
 * The turns the current code runs inside, innermost first. Frames chain because a tool may run another
 * session's turn (a subagent) inside its own.
 */
interface TurnFrame {
  readonly runner: TurnRunner;
  readonly turnId: number;
  readonly outer: TurnFrame | undefined;
}

const turnFrames = new AsyncLocalStorage<TurnFrame>();

export class TurnRunner {
  readonly #context: TurnRunnerContext;
  #turn:
    | { readonly id: number; readonly controller: AbortController; readonly ended: Promise<void> }
    | undefined;
  #turnCount = 0;

  constructor(context: TurnRunnerContext) {
    this.#context = context;
  }

  /** True while a turn runs. */
  get running(): boolean {
    return this.#turn !== undefined;
  }

  /** Resolves when the running turn has ended; undefined when none runs. */
  get ended(): Promise<void> | undefined {
    return this.#turn?.ended;
  }

  /** Aborts the running turn's signal with `reason`; false when none runs. */
  interrupt(reason: string): boolean {
    if (!this.#turn) return false;
    this.#turn.controller.abort(new Error(reason));
    return true;
  }

  /** True when the caller runs inside this session's turn that is still running. */
  calledFromOwnTurn(): boolean {
    const turn = this.#turn;
    if (turn === undefined) return false;
    for (let frame = turnFrames.getStore(); frame; frame = frame.outer) {
      if (frame.runner === this && frame.turnId === turn.id) return true;
    }
    return false;
  }

  /**
   * Runs one turn for `source`, delivering `notifications` (and `input`, for a person's turn) first.
   * Resolves true when it ended because the store failed to record the delivery of notifications.
   */
  async run(
    source: TurnSource,
    notifications: NotificationReservation,
    input: QueuedUserInput | undefined,
  ): Promise<boolean> {
    const context = this.#context;
    const turnId = ++this.#turnCount;
    const controller = new AbortController();
    let markEnded!: () => void;
    const ended = new Promise<void>((resolve) => {
      markEnded = resolve;
    });
    this.#turn = { id: turnId, controller, ended };
    context.status.setState('running');
    const title = input ? firstLine(input.text) : batchTitle(notifications.notifications);
    context.status.emit({ type: 'turn-start', turnId, source, title });
    // A turn for background results starts a trace of its own (the delivery span links back to the
    // tasks); a person's turn continues the context the input was sent in.
    const span = context.tracing.startSpan('invoke_agent', {
      parent: source === 'background_task' ? 'root' : (input?.traceContext ?? 'root'),
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.conversation.id': context.sessionId,
        'errand.turn.id': turnId,
        'errand.turn.source': source,
      },
    });
    let outcome: TurnOutcome = { turnId, reason: 'error', text: '' };
    let deliveryFailed = false;
    try {
      const ran = await context.tracing.withSpan(span, () =>
        this.#runTraced(source, turnId, controller, notifications, input),
      );
      deliveryFailed = ran.deliveryFailed;
      outcome = ran.outcome;
    } finally {
      span.setAttributes({ 'errand.turn.outcome': outcome.reason });
      if (outcome.reason === 'error') span.setError(outcome.error ?? 'the turn failed', 'turn_failed');
      span.end();
      this.#turn = undefined;
      markEnded();
    }
    context.status.emit({
      type: 'turn-end',
      turnId,
      reason: outcome.reason,
      text: outcome.text,
      ...(outcome.error ? { error: outcome.error } : {}),
    });
    input?.settle(outcome);
    if (!context.status.isClosing()) context.status.setState('idle');
    return deliveryFailed;
  }

  /** The turn itself, inside its span: delivery, then the turn loop in the turn's frame. */
  async #runTraced(
    source: TurnSource,
    turnId: number,
    controller: AbortController,
    notifications: NotificationReservation,
    input: QueuedUserInput | undefined,
  ): Promise<{ outcome: TurnOutcome; deliveryFailed: boolean }> {
    const context = this.#context;
    let outcome: TurnOutcome;
    let inputDelivered = false;
    try {
      const delivered = context.inbox.deliverReserved(notifications);
      if (input) {
        context.ledger.deliverInput(input, context.agent.beforeUserPrompt(input.text));
        inputDelivered = true;
      }
      if (source === 'background_task' && delivered.length === 0) {
        // Every notification of the batch was stale or already delivered: nothing to wake the model for.
        outcome = { turnId, reason: 'completed', text: '' };
      } else {
        const frame: TurnFrame = { runner: this, turnId, outer: turnFrames.getStore() };
        outcome = await turnFrames.run(frame, () => runTurn(this.#turnContext(turnId, controller.signal)));
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const deliveryFailed = ErrandError.hasCode(error, NOTIFICATION_DELIVERY_FAILED);
      context.logger.warn(`session ${context.sessionId}: turn ${turnId} failed`, {
        error: message,
        ...(ErrandError.isInstance(error) ? { code: error.code } : {}),
      });
      // The input will never be delivered (its turn failed before it): its ledger entry must not stay queued.
      if (input && !inputDelivered) this.#discardUndeliveredInput(input);
      return { outcome: { turnId, reason: 'error', text: '', error: message }, deliveryFailed };
    }
    return { outcome, deliveryFailed: false };
  }

  #turnContext(turnId: number, signal: AbortSignal): TurnContext {
    const context = this.#context;
    return {
      turnId,
      signal,
      model: context.agent.model(),
      system: context.agent.system(),
      tools: context.agent.tools(),
      limits: context.limits,
      modelMessages: () => context.transcript.modelMessages(),
      append: (message) => context.transcript.append(message),
      injectQueuedNotifications: () => {
        const reservation = context.inbox.reserveForTurn({ source: STEER_SOURCE, form: 'each' });
        return context.inbox.deliverReserved(reservation).length > 0;
      },
      appendToolResults: (message, ends) => context.transcript.appendToolResults(message, ends),
      durable: () => context.transcript.durable(),
      toolContext: (toolCallId) => context.agent.toolContext(toolCallId, signal),
      persistenceNote: () => context.transcript.persistenceNote(),
      emit: (event) => context.status.emit(event),
      tracing: context.tracing,
    };
  }

  #discardUndeliveredInput(input: QueuedUserInput): void {
    try {
      this.#context.ledger.discardEntries([input.ledgerId], 'delivery_failed');
    } catch (error) {
      // A resume discards it (`session_resumed`); it is never delivered either way.
      this.#context.logger.warn(
        `session ${this.#context.sessionId}: discarding an undelivered input failed`,
        {
          ledgerId: input.ledgerId,
          error: describeError(error),
        },
      );
    }
  }
}

/** First three task labels, then "+N" for the rest. */
export function batchTitle(notifications: readonly { readonly label: string }[]): string {
  const labels = notifications.slice(0, 3).map((notification) => notification.label);
  const rest = notifications.length - labels.length;
  return rest > 0 ? `${labels.join(', ')} +${rest}` : labels.join(', ');
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}
