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
 */
import { type Experimental_Steering, experimental_createSteering } from 'ai';
import {
  createDeliveryPolicy,
  DELIVERY_POLICY_OPTION_KEYS,
  type DeliveryPolicy,
  type DeliveryPolicyOptions,
  type TaskNotification,
} from '../../notifications/index.js';
import { consoleLogger } from '../../registry/index.js';
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

export interface AiSdkNotificationBridge {
  /**
   * The steering object for the next generation (pass it as `experimental_steering`). Waiting
   * notifications are steered into it at once, so the generation's first request carries them.
   */
  nextSteering(): Experimental_Steering;
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

  const steer = (steering: Experimental_Steering, notification: TaskNotification): void => {
    sequence += 1;
    const outcome = steering.steer(notification.text, { id: `errand-${notification.taskId}-${sequence}` });
    options.onSteer?.(notification);
    void outcome.then((outcome) => {
      if (outcome.type === 'delivered') return;
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
