/**
 * Delivers Errand's `<task-notification>` messages into a harness built on the AI SDK's own loop,
 * through its steering API: a user message added at the next step boundary of a running
 * `generateText` / `streamText` / agent call.
 *
 * A `wakeup` notification that arrives while a generation runs is steered into it (the run continues
 * for it even if the model was about to finish). One that arrives between generations waits, and
 * `onWakeup` tells the harness it may start one. `quiet` notifications always wait for the next
 * generation, where they are delivered with its first request. A message the SDK reports as not
 * delivered (the run ended first) waits for the next generation too; the delivery claim stays held
 * until the bridge is disposed, when undelivered notifications return their claims.
 *
 * When a tool result shows the model how a task ended (its `taskEnds`: `task_output` on a finished task),
 * `taskEndTold` drops that task's waiting notification (its claim stays taken: the model did learn
 * of the end) and one of that attempt that arrives later. `toAiSdkTools({ notifications })` calls it.
 * One already steered into the running generation but not yet sent is taken out by `prepareStep`, when
 * the harness passes it to the generation.
 *
 * The waiting notifications live in a `NotificationInbox`, the one a session delivers through, over a
 * ledger that records nothing: a steered message is a reservation, committed when the SDK reports it
 * delivered, released to the head of the queue when the run ended first, discarded when the model read
 * the end meanwhile.
 */
import {
  type Experimental_Steering,
  experimental_createSteering,
  type ModelMessage,
  type UserModelMessage,
} from 'ai';
import {
  createDeliveryPolicy,
  type DeliveryPolicy,
  deliveryPolicyOptions,
  endCovers,
  type NotificationLane,
  releaseAttemptClaim,
  type TaskNotification,
  validateToldTaskEnd,
} from '../../notifications/index.js';
import {
  CommandQueue,
  NotificationInbox,
  type NotificationReservation,
  sessionNotificationOf,
  volatileInboxLedger,
} from '../../session/index.js';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';
import { resolveTracing, type TraceContext, tracingOption } from '../../tracing/index.js';

/**
 * The options of `createAiSdkNotificationBridge`: the delivery policy's (but `enqueue`) and the bridge's
 * own. A key not declared here is rejected with `UNKNOWN_OPTION`.
 */
export const aiSdkNotificationBridgeOptions = defineOptions('createAiSdkNotificationBridge', {
  ...deliveryPolicyOptions.omit('enqueue').rules,
  /** Called when a `wakeup` notification arrives while no generation runs: start one to deliver it. */
  onWakeup: option.func<(notification: TaskNotification) => void>(),
  /** Called when a notification is handed to a generation's steering (a ledger can record it here). */
  onSteer: option.func<(notification: TaskNotification) => void>(),
  /** Creates each generation's steering object. Default: the SDK's `experimental_createSteering`. */
  createSteering: option.func<() => Experimental_Steering>({ default: experimental_createSteering }),
  /**
   * The most notifications that may wait for a generation; one more is refused (its claim is returned
   * and a warning logged). Default 1000.
   */
  maxPendingNotifications: option.integer({ min: 1, default: 1000 }),
  /**
   * Where a steered delivery's `deliver_notifications` span goes: into the context active when
   * `nextSteering()` was called (the harness's span around the generation), linked to the tasks' spans.
   * A `Tracing`, or false for none. Default: the global OpenTelemetry API when installed.
   */
  tracing: tracingOption(),
});

/** Options of `createAiSdkNotificationBridge`. */
export type AiSdkNotificationBridgeOptions = OptionsInput<typeof aiSdkNotificationBridgeOptions.rules>;

/** A task end a tool result showed the model; `attempt` when the result named it. */
export interface AiSdkToldTaskEnd {
  readonly taskId: string;
  readonly attempt?: number | undefined;
}

/** The `source` the bridge's inbox records a steered delivery with. */
export const AI_SDK_STEERING_SOURCE = 'ai_sdk_steering';

/** The fixed defaults of `AiSdkNotificationBridgeOptions`. */
export const AI_SDK_BRIDGE_DEFAULTS = aiSdkNotificationBridgeOptions.defaults;

export interface AiSdkNotificationBridge {
  /**
   * The steering object for the next generation (pass it as `experimental_steering`). Waiting
   * notifications are steered into it at once, so the generation's first request carries them.
   */
  nextSteering(): Experimental_Steering;
  /**
   * Tells the bridge that a tool result showed the model how `taskId` ended (attempt `attempt`, when
   * known; a result's `taskEnds` lists them). Its waiting notifications of that attempt or an earlier one
   * (all of them when no attempt is known) are dropped, their delivery claims kept taken — the model
   * read the end once already — and a notification of that attempt that arrives later is dropped too
   * (the last 256 task ids are remembered). A later attempt of a resumed task is delivered as usual.
   * `toAiSdkTools(definitions, { notifications: bridge })` calls this after every tool call. A
   * notification already steered into the running generation stays in its steering until the next
   * step boundary; `prepareStep` takes it out there.
   */
  taskEndTold(end: AiSdkToldTaskEnd): void;
  /**
   * For the generation's `prepareStep` (pass it as is, or merge its result into your own): at a step
   * boundary it removes the steered notifications whose task end a tool result of the step just showed
   * the model (they are then dropped, their claims kept taken). Returns undefined when there is none.
   * Without it, such a notification still reaches the model next to the tool result.
   */
  readonly prepareStep: (options: {
    readonly messages: readonly ModelMessage[];
  }) => { messages: ModelMessage[] } | undefined;
  /** Notifications waiting for a generation, oldest first. */
  readonly pending: readonly TaskNotification[];
  /** The delivery policy behind the bridge (`noteUserInput()`, `seal()`, workflow progress). */
  readonly policy: DeliveryPolicy;
  /** Unsubscribes and returns the claims of notifications that were never delivered. */
  dispose(): void;
}

export function createAiSdkNotificationBridge(
  options: AiSdkNotificationBridgeOptions,
): AiSdkNotificationBridge {
  const resolved = aiSdkNotificationBridgeOptions.resolve(options);
  const { logger, createSteering, maxPendingNotifications: maxPending, owner, tasks } = resolved;
  const currentGeneration = resolved.currentBranchGeneration ?? (() => owner.branchGeneration);
  let current: Experimental_Steering | undefined;
  const tracing = resolveTracing(options.tracing);
  /** The context of the generation being steered (captured by `nextSteering`). */
  let generationContext: TraceContext | undefined;
  let disposed = false;
  let sequence = 0;
  /** Ledger id in the inbox → the policy's notification. */
  const notifications = new Map<number, TaskNotification>();
  /** Steered messages the generation has not resolved yet, and their notifications. */
  const inFlight = new Map<UserModelMessage, TaskNotification>();
  /** Steered messages whose task end a tool result showed meanwhile: `prepareStep` takes them out. */
  const discarded = new Set<UserModelMessage>();

  const returnClaim = (notification: TaskNotification): void => {
    if (notification.event !== 'terminal') return;
    try {
      // Only this attempt's claim: a resumed task's belongs to whoever received that end.
      releaseAttemptClaim(tasks, notification.taskId, notification.attempt, owner);
    } catch (error) {
      logger.warn(`task ${notification.taskId}: returning the claim of an undelivered notification failed`, {
        taskId: notification.taskId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };

  // The same inbox a session delivers through, on a ledger that records nothing: its rules decide what
  // waits, what a tool result withdrew, and what goes back to the queue when a generation missed it.
  const inbox = new NotificationInbox({
    owner: {
      sessionId: owner.sessionId,
      branchGeneration: currentGeneration,
      isClosing: () => disposed,
      isDraining: () => false,
    },
    queue: new CommandQueue(maxPending),
    ledger: volatileInboxLedger(),
    // Nothing drains this inbox on its own: steering hands each notification over.
    drain: { wake: () => {}, deliverySucceeded: () => {}, deliveryFailed: () => {} },
    now: resolved.now,
    emit: () => {},
    tracing,
    discarded(queued, reason) {
      for (const entry of queued) {
        const notification = notifications.get(entry.ledgerId);
        notifications.delete(entry.ledgerId);
        // The model read the end with a tool call: the claim stays taken. Otherwise it was never told.
        if (notification !== undefined && reason !== 'result_read') returnClaim(notification);
      }
    },
  });

  const steer = (
    steering: Experimental_Steering,
    reservation: NotificationReservation,
    notification: TaskNotification,
  ): void => {
    sequence += 1;
    // Our own message object: `prepareStep` finds it among the step's messages by identity.
    const message: UserModelMessage = { role: 'user', content: notification.text };
    inFlight.set(message, notification);
    const outcome = steering.steer(message, { id: `errand-${notification.taskId}-${sequence}` });
    resolved.onSteer?.(notification);
    void outcome.then((outcome) => {
      inFlight.delete(message);
      const taken = discarded.delete(message);
      if (outcome.type === 'delivered') {
        // Forgotten first: the model has it, so nothing the commit finds can return its claim.
        for (const entry of reservation.notifications) notifications.delete(entry.ledgerId);
        reservation.commit();
        return;
      }
      // The model read the end with a tool call meanwhile: it is not told again (the claim stays taken).
      if (taken || inbox.wasTold(notification)) {
        reservation.discard('result_read');
        return;
      }
      // The run ended (or prepareStep dropped it) before delivery: the next generation takes it.
      if (current === steering) current = undefined;
      if (current !== undefined) {
        steer(current, reservation, notification);
        return;
      }
      reservation.release();
      if (notification.lane === 'wakeup') resolved.onWakeup?.(notification);
    });
  };

  /** Reserves one queued notification (of `lane`, when named) and steers it into `steering`. */
  const steerNext = (steering: Experimental_Steering, lane?: NotificationLane): void => {
    const reservation = inbox.reserve({
      source: AI_SDK_STEERING_SOURCE,
      limit: 1,
      ...(lane ? { lane } : {}),
      // Into the generation, never into the context of the task whose end just arrived.
      ...(generationContext === undefined ? {} : { traceContext: generationContext }),
    });
    const entry = reservation.notifications[0];
    const notification = entry === undefined ? undefined : notifications.get(entry.ledgerId);
    if (notification !== undefined) steer(steering, reservation, notification);
  };

  const {
    onWakeup: _onWakeup,
    onSteer: _onSteer,
    createSteering: _createSteering,
    maxPendingNotifications: _maxPendingNotifications,
    tracing: _tracing,
    ...policyOptions
  } = options;
  const policy = createDeliveryPolicy({
    ...policyOptions,
    enqueue(notification) {
      const key = `${notification.taskId}:${notification.attempt}:${notification.event}:${++sequence}`;
      const admission = inbox.admit({
        ...sessionNotificationOf(notification, key),
        attempt: notification.attempt,
      });
      if (!admission.admitted) {
        // The model already read this end with a tool call: the claim stays taken, nothing is told.
        if (admission.reason === 'result_read') return;
        // A late result of an abandoned branch: it is never told, so its claim goes back.
        returnClaim(notification);
        return;
      }
      notifications.set(admission.ledgerId, notification);
      if (notification.lane !== 'wakeup') return;
      if (current !== undefined) steerNext(current, 'wakeup');
      else resolved.onWakeup?.(notification);
    },
  });

  return {
    nextSteering() {
      const steering = createSteering();
      current = steering;
      generationContext = tracing.capture();
      // One reservation per message: each has its own outcome. Stale ones are dropped on the way.
      for (let left = inbox.queued; left > 0; left -= 1) steerNext(steering);
      return steering;
    },
    taskEndTold(end) {
      inbox.markTold(end);
      const reported = validateToldTaskEnd(end);
      // A steered one still in the generation's steering: `prepareStep` takes it out at the step boundary.
      for (const [message, notification] of inFlight) {
        if (endCovers(reported, notification)) discarded.add(message);
      }
    },
    prepareStep({ messages }) {
      if (discarded.size === 0) return undefined;
      const kept = messages.filter((message) => !discarded.has(message as UserModelMessage));
      return kept.length === messages.length ? undefined : { messages: kept };
    },
    get pending() {
      return inbox.queuedNotifications().flatMap((entry) => notifications.get(entry.ledgerId) ?? []);
    },
    policy,
    dispose() {
      policy.dispose();
      current = undefined;
      // Never delivered: their claims go back (see `discarded` above).
      inbox.discardWhere(() => true, 'disposed');
      disposed = true;
    },
  };
}
