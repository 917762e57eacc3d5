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
 * When a tool result shows the model how a task ended (`task_output`, or `task_kill` on a finished task),
 * `taskEndReported` drops that task's waiting notification (its claim stays taken: the model did learn
 * of the end) and one of that attempt that arrives later. `toAiSdkTools({ notifications })` calls it.
 * One already steered into the running generation but not yet sent is taken out by `prepareStep`, when
 * the harness passes it to the generation.
 */
import {
  type Experimental_Steering,
  experimental_createSteering,
  type ModelMessage,
  type UserModelMessage,
} from 'ai';
import {
  createDeliveryPolicy,
  DELIVERY_POLICY_OPTION_KEYS,
  type DeliveryPolicy,
  type DeliveryPolicyOptions,
  type TaskNotification,
} from '../../notifications/index.js';
import { consoleLogger, InvalidArgumentError } from '../../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../../tasks/option-keys.js';

/**
 * Options of `createAiSdkNotificationBridge`: the delivery policy's (but `enqueue`) and the bridge's own. A
 * key not listed here is rejected with `UNKNOWN_OPTION`.
 */
export interface AiSdkNotificationBridgeOptions extends Omit<DeliveryPolicyOptions, 'enqueue'> {
  /** Called when a `wakeup` notification arrives while no generation runs: start one to deliver it. */
  readonly onWakeup?: (notification: TaskNotification) => void;
  /** Called when a notification is handed to a generation's steering (a ledger can record it here). */
  readonly onSteer?: (notification: TaskNotification) => void;
  /** Creates each generation's steering object. Default: the SDK's `experimental_createSteering`. */
  readonly createSteering?: () => Experimental_Steering;
}

/** The bridge's own options; the rest go to the delivery policy. */
const BRIDGE_OWN_OPTION_KEYS = optionKeys<
  Omit<AiSdkNotificationBridgeOptions, keyof DeliveryPolicyOptions>
>()({
  onWakeup: true,
  onSteer: true,
  createSteering: true,
});

const BRIDGE_OPTION_KEYS: readonly string[] = [
  ...DELIVERY_POLICY_OPTION_KEYS.filter((key) => key !== 'enqueue'),
  ...BRIDGE_OWN_OPTION_KEYS,
];

/** How many task ids the bridge remembers a reported end for (the oldest is forgotten first). */
const MAX_REPORTED_ENDS = 256;

/** A task end a tool result showed the model; `attempt` when the result named it. */
export interface AiSdkReportedTaskEnd {
  readonly taskId: string;
  readonly attempt?: number | undefined;
}

export interface AiSdkNotificationBridge {
  /**
   * The steering object for the next generation (pass it as `experimental_steering`). Waiting
   * notifications are steered into it at once, so the generation's first request carries them.
   */
  nextSteering(): Experimental_Steering;
  /**
   * Tells the bridge that a tool result showed the model how `taskId` ended (attempt `attempt`, when
   * known; `reportedTaskEnd(result)` finds it). Its waiting notifications of that attempt or an earlier one
   * (all of them when no attempt is known) are dropped, their delivery claims kept taken — the model
   * read the end once already — and a notification of that attempt that arrives later is dropped too
   * (the last 256 task ids are remembered). A later attempt of a resumed task is delivered as usual.
   * `toAiSdkTools(definitions, { notifications: bridge })` calls this after every tool call. A
   * notification already steered into the running generation stays in its steering until the next
   * step boundary; `prepareStep` takes it out there.
   */
  taskEndReported(end: AiSdkReportedTaskEnd): void;
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
  rejectUnknownOptions(options, BRIDGE_OPTION_KEYS, { where: 'createAiSdkNotificationBridge' });
  const logger = options.logger ?? consoleLogger;
  const createSteering = options.createSteering ?? experimental_createSteering;
  const currentGeneration = options.currentBranchGeneration ?? (() => options.owner.branchGeneration);
  let pending: TaskNotification[] = [];
  let current: Experimental_Steering | undefined;
  let sequence = 0;
  /** Task id → the highest attempt whose end a tool result showed the model (oldest first). */
  const reportedEnds = new Map<string, number>();

  /** Steered messages the generation has not resolved yet, and their notifications. */
  const inFlight = new Map<UserModelMessage, TaskNotification>();
  /** Steered messages whose task end a tool result showed meanwhile: `prepareStep` takes them out. */
  const withdrawn = new Set<UserModelMessage>();

  const wasReported = (notification: TaskNotification): boolean => {
    const reported = reportedEnds.get(notification.taskId);
    return reported !== undefined && notification.attempt <= reported;
  };

  const steer = (steering: Experimental_Steering, notification: TaskNotification): void => {
    sequence += 1;
    // Our own message object: `prepareStep` finds it among the step's messages by identity.
    const message: UserModelMessage = { role: 'user', content: notification.text };
    inFlight.set(message, notification);
    const outcome = steering.steer(message, { id: `errand-${notification.taskId}-${sequence}` });
    options.onSteer?.(notification);
    void outcome.then((outcome) => {
      inFlight.delete(message);
      const taken = withdrawn.delete(message);
      if (outcome.type === 'delivered') return;
      // The model read the end with a tool call meanwhile: it is not told again (the claim stays taken).
      if (taken || wasReported(notification)) return;
      // The run ended (or prepareStep dropped it) before delivery: wait for the next generation.
      if (current === steering) current = undefined;
      if (current === undefined) hold(notification);
      else steer(current, notification);
    });
  };

  const hold = (notification: TaskNotification): void => {
    pending.push(notification);
    if (notification.lane === 'wakeup') options.onWakeup?.(notification);
  };

  const {
    onWakeup: _onWakeup,
    onSteer: _onSteer,
    createSteering: _createSteering,
    ...policyOptions
  } = options;
  const policy = createDeliveryPolicy({
    ...policyOptions,
    enqueue(notification) {
      // The model already read this end with a tool call: the claim stays taken, nothing is told.
      if (wasReported(notification)) return;
      if (current !== undefined && notification.lane === 'wakeup') steer(current, notification);
      else hold(notification);
    },
  });

  const releaseClaim = (notification: TaskNotification): void => {
    if (notification.event !== 'terminal') return;
    try {
      // A resumed task is a new attempt: its claim is not this notification's to return.
      if (options.tasks.get(notification.taskId, options.owner).attempt !== notification.attempt) return;
      options.tasks.releaseClaim(notification.taskId, options.owner);
    } catch (error) {
      logger.warn(`task ${notification.taskId}: returning the claim of an undelivered notification failed`, {
        taskId: notification.taskId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };

  return {
    nextSteering() {
      const steering = createSteering();
      current = steering;
      const waiting = pending;
      pending = [];
      for (const notification of waiting) {
        // A rewind since it was queued makes it a late result of an abandoned branch.
        if (notification.branchGeneration !== currentGeneration()) {
          releaseClaim(notification);
          continue;
        }
        steer(steering, notification);
      }
      return steering;
    },
    taskEndReported(end) {
      const { taskId, attempt } = end;
      if (typeof taskId !== 'string' || taskId === '') {
        throw new InvalidArgumentError('taskId', 'a task id', taskId);
      }
      if (attempt !== undefined && !Number.isSafeInteger(attempt)) {
        throw new InvalidArgumentError('attempt', 'an integer or undefined', attempt);
      }
      if (attempt !== undefined) {
        const known = reportedEnds.get(taskId);
        reportedEnds.delete(taskId);
        reportedEnds.set(taskId, Math.max(known ?? 0, attempt));
        if (reportedEnds.size > MAX_REPORTED_ENDS) {
          const oldest = reportedEnds.keys().next().value;
          if (oldest !== undefined) reportedEnds.delete(oldest);
        }
      }
      const read = (notification: TaskNotification): boolean =>
        notification.taskId === taskId && (attempt === undefined || notification.attempt <= attempt);
      // Dropped, not released: the model learned of the end, so no one else may tell it again.
      pending = pending.filter((notification) => !read(notification));
      for (const [message, notification] of inFlight) if (read(notification)) withdrawn.add(message);
    },
    prepareStep({ messages }) {
      if (withdrawn.size === 0) return undefined;
      const kept = messages.filter((message) => !withdrawn.has(message as UserModelMessage));
      return kept.length === messages.length ? undefined : { messages: kept };
    },
    get pending() {
      return [...pending];
    },
    policy,
    dispose() {
      policy.dispose();
      current = undefined;
      for (const notification of pending) releaseClaim(notification);
      pending = [];
    },
  };
}
