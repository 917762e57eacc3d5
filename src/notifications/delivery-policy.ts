/**
 * The delivery policy: turns a terminal task into at most one `<task-notification>` for its owner's
 * session. It subscribes to one exact owner, suppresses what must not be delivered, takes the one-shot
 * claim (first come wins against readers, waiters and the model's own kill), formats, and hands the
 * notification to the session's queue — returning the claim if the queue refuses it. It owns no queue.
 */
import {
  consoleLogger,
  type Disposer,
  describeError,
  isTerminalStatus,
  isValidTaskKind,
  type Owner,
  systemClock,
  type TaskKind,
  type TaskService,
  type TaskSnapshot,
  taskFact,
} from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';
import { formatGenericNotification } from './format-generic.js';
import { formatMonitorNotification, type MonitorEvent } from './format-monitor.js';
import { formatterFor } from './format-notification.js';
import { formatWorkflowProgressNotification, type WorkflowProgressEvent } from './format-workflow.js';
import { type NotificationFormatter, outputTailOptions } from './notification-format.js';
import { releaseAttemptClaim } from './release-attempt-claim.js';
import {
  NOTIFICATION_LANES,
  type NotificationEvent,
  type NotificationLane,
  type TaskNotification,
} from './task-notification.js';

/** Recent output without consuming it: a producer's ring buffer or the end of its output file. */
export type OutputTailSource = (snapshot: TaskSnapshot) => string | undefined | Promise<string | undefined>;

/** The default tail source: what the producer published as `detail.outputTail`. */
export const detailOutputTail: OutputTailSource = (snapshot) => taskFact(snapshot, 'outputTail');

const isOwner = (value: unknown) => typeof (value as Partial<Owner> | null)?.sessionId === 'string';
const lane = () => option.oneOf(NOTIFICATION_LANES);

/** The options of `createDeliveryPolicy`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const deliveryPolicyOptions = defineOptions('createDeliveryPolicy', {
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['onTaskDone'])),
  /** The session whose tasks this policy notifies — exactly this instance, not a reused session id. */
  owner: option.required(option.custom<Owner>('an Owner', isOwner)),
  /** The session's queue. A throw (or a rejection) returns the claim and is logged. */
  enqueue: option.required(option.func<(notification: TaskNotification) => void | Promise<void>>()),
  /** The session's current branch generation. Default: `owner.branchGeneration`. */
  currentBranchGeneration: option.func<() => number>(),
  /** True while the runtime shuts down: nothing is delivered. Default: never. */
  isShuttingDown: option.func<() => boolean>(),
  /** True once the owner's runtime sealed its notifications (a finished subagent). `seal()` also seals. */
  isSealed: option.func<() => boolean>(),
  /** The lane when nothing more specific applies. Default `wakeup`. */
  defaultLane: option.oneOf(NOTIFICATION_LANES, { default: 'wakeup' }),
  /** Lanes per kind. A task's own `detail.notificationLane` wins over these. */
  lanes: option.record<TaskKind, NotificationLane, NotificationLane | undefined>(lane()),
  /** Lane per task, consulted after `detail.notificationLane` and before `lanes`. */
  laneOf: option.func<(snapshot: TaskSnapshot) => NotificationLane | undefined>(),
  /**
   * Wake-ups allowed without user input; later notifications take the quiet lane until
   * `noteUserInput()`. Default 3. `Infinity` disables the budget; 0 never wakes.
   */
  wakeBudget: option.integer({ min: 0, default: 3, allowInfinity: true }),
  /**
   * What counts as a wake-up. `notification` (the default): every notification handed on the wakeup
   * lane. `external`: only `noteWake()` calls — a session runtime calls it once per turn a batch of
   * notifications started, so a burst that wakes the agent once costs one wake-up.
   */
  wakeCounting: option.oneOf(['notification', 'external'], { default: 'notification' }),
  /** The most UTF-8 bytes of one notification (a task's `outputLimitBytes` may lower it). Default 8192. */
  maxNotificationBytes: option.integer({ min: 1, default: 8192 }),
  /** Limits of `<output-tail>`; `false` leaves it out. Default 20 lines / 2048 bytes. */
  outputTail: option.orFalse(option.nested(outputTailOptions)),
  /** Where the tail comes from. Default: `detail.outputTail`. Never the model's read cursor. */
  readOutputTail: option.func<OutputTailSource>({ default: detailOutputTail }),
  /** Forms per kind, over the built-in ones. */
  formatters: option.record<TaskKind, NotificationFormatter, NotificationFormatter | undefined>(
    option.func<NotificationFormatter>(),
  ),
  /**
   * Kinds whose stops by the model are notified anyway (a workflow the model stopped through another
   * tool, which then reads "amend it"). Default none: the model's own kill is reported by its tool result.
   */
  notifyModelStops: option.list(option.custom<TaskKind>('a task kind', isValidTaskKind), { default: [] }),
  /** Epoch-milliseconds clock. Default: the system clock. */
  now: option.func({ default: systemClock.now }),
  /** Told about failed enqueues, tails and formatters. Default: the console logger. */
  logger: option.logger({ default: consoleLogger }),
});

/** Options of `createDeliveryPolicy`. */
export type DeliveryPolicyOptions = OptionsInput<typeof deliveryPolicyOptions.rules>;

/** The fixed defaults of `DeliveryPolicyOptions`. */
export const DELIVERY_POLICY_DEFAULTS = deliveryPolicyOptions.defaults;

export type DeliverySkipReason =
  | 'disposed'
  | 'foreground'
  | 'not_terminal'
  | 'not_running'
  | 'not_found'
  | 'superseded'
  | 'shutting_down'
  | 'branch_mismatch'
  | 'sealed'
  | 'model_stopped'
  | 'already_claimed'
  | 'enqueue_failed';

export type DeliveryOutcome =
  | { readonly delivered: true; readonly notification: TaskNotification }
  | { readonly delivered: false; readonly reason: DeliverySkipReason; readonly error?: unknown };

export interface DeliveryPolicy {
  /** Delivers a terminal snapshot (the subscription calls this; tests and resume sweeps may too). Never rejects. */
  deliver(snapshot: TaskSnapshot): Promise<DeliveryOutcome>;
  /**
   * The notification of an ending the task service no longer knows — one a store recorded as finished
   * and not yet told, found on resume — with the same suppression rules, lane and form as a live one, or
   * undefined when a rule suppresses it. It takes no claim and hands nothing on: the store's record is
   * the claim, and the caller queues it. `outputTail` is what the task's output file ends with.
   */
  notificationFor(snapshot: TaskSnapshot, outputTail?: string): TaskNotification | undefined;
  /** Notifies that a running workflow stalled or needs input. No claim: the task is still running. */
  notifyWorkflowProgress(taskId: string, event: WorkflowProgressEvent): Promise<DeliveryOutcome>;
  /**
   * Notifies output lines a monitor matched on a running task, on the monitor's lane (the wake budget
   * applies). No claim: the task's own end is notified as usual. Never rejects.
   */
  notifyMonitor(taskId: string, event: MonitorEvent): Promise<DeliveryOutcome>;
  /** A user message arrived: the wake budget is restored. */
  noteUserInput(): void;
  /** Background notifications woke the agent (counted when `wakeCounting` is `external`). */
  noteWake(): void;
  /** Stops every later delivery (a subagent runtime whose run ended). */
  seal(): void;
  readonly sealed: boolean;
  /** Wake-ups since the last user input. */
  readonly consecutiveWakes: number;
  /** Unsubscribes. Idempotent. */
  dispose(): void;
}

function isSuperseded(snapshot: TaskSnapshot): boolean {
  // Any value but an empty one marks it, whatever a producer outside TypeScript put there.
  const value: unknown = snapshot.detail.supersededBy;
  return value !== undefined && value !== null && value !== false && value !== '';
}

/** Creates the policy and subscribes it to `owner`'s terminal tasks. */
export function createDeliveryPolicy(input: DeliveryPolicyOptions): DeliveryPolicy {
  const options = deliveryPolicyOptions.resolve(input);
  const { tasks, owner, enqueue, logger, now, wakeBudget, wakeCounting, readOutputTail } = options;
  const currentGeneration = options.currentBranchGeneration ?? (() => owner.branchGeneration);
  const isShuttingDown = options.isShuttingDown ?? (() => false);
  const maxBytes = options.maxNotificationBytes;
  const tailLimits = options.outputTail;
  const notifyModelStops = new Set(options.notifyModelStops);
  let sealed = false;
  let disposed = false;
  let consecutiveWakes = 0;

  /** The suppression rules that hold for every notification, checked again right before enqueueing. */
  const suppression = (snapshot: TaskSnapshot): DeliverySkipReason | undefined => {
    if (disposed) return 'disposed';
    // Foreground work answered its own tool call; only background work is notified.
    if (!snapshot.isBackgrounded) return 'foreground';
    if (isSuperseded(snapshot)) return 'superseded';
    if (isShuttingDown()) return 'shutting_down';
    if (sealed || options.isSealed?.() === true) return 'sealed';
    if (snapshot.branchGeneration !== currentGeneration()) return 'branch_mismatch';
    return undefined;
  };

  const laneFor = (snapshot: TaskSnapshot, asked?: NotificationLane): NotificationLane => {
    const requested =
      asked ??
      taskFact(snapshot, 'notificationLane') ??
      options.laneOf?.(snapshot) ??
      options.lanes[snapshot.kind] ??
      options.defaultLane;
    return requested === 'wakeup' && consecutiveWakes >= wakeBudget ? 'quiet' : requested;
  };

  const budgetFor = (snapshot: TaskSnapshot): number =>
    snapshot.outputLimitBytes === undefined ? maxBytes : Math.min(maxBytes, snapshot.outputLimitBytes);

  const readTail = async (snapshot: TaskSnapshot): Promise<string | undefined> => {
    if (tailLimits === false) return undefined;
    try {
      const tail = await readOutputTail(snapshot);
      return typeof tail === 'string' ? tail : undefined;
    } catch (error) {
      logger.warn(`task ${snapshot.id}: reading its output tail for the notification failed`, {
        taskId: snapshot.id,
        error: describeError(error),
      });
      return undefined;
    }
  };

  const format = (snapshot: TaskSnapshot, outputTail: string | undefined): string => {
    const input = {
      snapshot,
      outputTailLimits: tailLimits,
      budgetBytes: budgetFor(snapshot),
      ...(outputTail === undefined ? {} : { outputTail }),
    };
    try {
      return formatterFor(snapshot.kind, options.formatters)(input);
    } catch (error) {
      logger.warn(
        `task ${snapshot.id}: the ${snapshot.kind} notification formatter failed; using the generic form`,
        {
          taskId: snapshot.id,
          error: describeError(error),
        },
      );
      return formatGenericNotification(input);
    }
  };

  const build = (
    snapshot: TaskSnapshot,
    event: NotificationEvent,
    text: string,
    extra: { readonly lane?: NotificationLane; readonly eventKey?: string } = {},
  ): TaskNotification => {
    const lane = laneFor(snapshot, extra.lane);
    const toolUseId = taskFact(snapshot, 'toolUseId');
    return Object.freeze({
      taskId: snapshot.id,
      kind: snapshot.kind,
      label: snapshot.label,
      status: snapshot.status,
      event,
      text,
      lane,
      priority: 'next' as const,
      attempt: snapshot.attempt,
      startedAt: snapshot.startedAt,
      branchGeneration: snapshot.branchGeneration,
      ...(toolUseId === undefined ? {} : { toolUseId }),
      ...(snapshot.traceparent === undefined ? {} : { traceparent: snapshot.traceparent }),
      createdAt: now(),
      ...(extra.eventKey === undefined ? {} : { eventKey: extra.eventKey }),
    });
  };

  const hand = async (
    snapshot: TaskSnapshot,
    event: NotificationEvent,
    text: string,
    extra: { readonly lane?: NotificationLane; readonly eventKey?: string } = {},
  ): Promise<DeliveryOutcome> => {
    const notification = build(snapshot, event, text, extra);
    const counted = notification.lane === 'wakeup' && wakeCounting === 'notification';
    if (counted) consecutiveWakes += 1;
    try {
      await enqueue(notification);
    } catch (error) {
      if (counted) consecutiveWakes -= 1;
      throw error;
    }
    return { delivered: true, notification };
  };

  const deliverNow = async (snapshot: TaskSnapshot): Promise<DeliveryOutcome> => {
    // Everything up to the claim runs synchronously inside the registry's settlement.
    if (disposed) return { delivered: false, reason: 'disposed' };
    if (!isTerminalStatus(snapshot.status)) return { delivered: false, reason: 'not_terminal' };
    const suppressed = suppression(snapshot);
    if (suppressed) return { delivered: false, reason: suppressed };
    if (snapshot.stopInitiator === 'model' && !notifyModelStops.has(snapshot.kind)) {
      // The model's kill was answered by its tool result; the claim keeps anyone else from notifying.
      claim(snapshot);
      return { delivered: false, reason: 'model_stopped' };
    }
    const claimed = claim(snapshot);
    if (claimed !== true) return { delivered: false, reason: claimed };

    const tail = await readTail(snapshot);
    const late = suppression(snapshot);
    if (late) {
      release(snapshot);
      return { delivered: false, reason: late };
    }
    const text = format(snapshot, tail);
    try {
      return await hand(snapshot, 'terminal', text);
    } catch (error) {
      release(snapshot);
      logger.warn(`task ${snapshot.id}: enqueueing its notification failed; the claim was returned`, {
        taskId: snapshot.id,
        error: describeError(error),
      });
      return { delivered: false, reason: 'enqueue_failed', error };
    }
  };

  const claim = (snapshot: TaskSnapshot): true | 'already_claimed' | 'not_found' => {
    try {
      return tasks.claim(snapshot.id, owner) ? true : 'already_claimed';
    } catch {
      // Forgotten by retention, or no longer this owner's: there is nothing to deliver.
      return 'not_found';
    }
  };

  const release = (snapshot: TaskSnapshot): void => {
    try {
      // Only this attempt's claim, and none once the task was forgotten (see release-attempt-claim.ts).
      releaseAttemptClaim(tasks, snapshot.id, snapshot.attempt, owner);
    } catch (error) {
      logger.warn(`task ${snapshot.id}: returning its delivery claim failed`, {
        taskId: snapshot.id,
        error: describeError(error),
      });
    }
  };

  const deliver = (snapshot: TaskSnapshot): Promise<DeliveryOutcome> =>
    deliverNow(snapshot).catch((error: unknown) => {
      logger.warn(`task ${snapshot.id}: delivering its notification failed`, {
        taskId: snapshot.id,
        error: describeError(error),
      });
      return { delivered: false, reason: 'enqueue_failed', error };
    });

  const unsubscribe: Disposer = tasks.onTaskDone(
    (snapshot) => {
      void deliver(snapshot);
    },
    { owner },
  );

  return {
    deliver,
    notificationFor(snapshot, outputTail) {
      if (!isTerminalStatus(snapshot.status) || suppression(snapshot) !== undefined) return undefined;
      if (snapshot.stopInitiator === 'model' && !notifyModelStops.has(snapshot.kind)) return undefined;
      const tail = tailLimits === false ? undefined : (outputTail ?? taskFact(snapshot, 'outputTail'));
      return build(snapshot, 'terminal', format(snapshot, tail));
    },
    async notifyWorkflowProgress(taskId, event) {
      let snapshot: TaskSnapshot;
      try {
        snapshot = tasks.get(taskId, owner);
      } catch {
        return { delivered: false, reason: 'not_found' };
      }
      if (isTerminalStatus(snapshot.status)) return { delivered: false, reason: 'not_running' };
      const suppressed = suppression(snapshot);
      if (suppressed) return { delivered: false, reason: suppressed };
      const text = formatWorkflowProgressNotification({ snapshot, event, budgetBytes: budgetFor(snapshot) });
      try {
        return await hand(snapshot, event.type, text);
      } catch (error) {
        logger.warn(`task ${snapshot.id}: enqueueing its ${event.type} notification failed`, {
          taskId: snapshot.id,
          error: describeError(error),
        });
        return { delivered: false, reason: 'enqueue_failed', error };
      }
    },
    async notifyMonitor(taskId, event) {
      let snapshot: TaskSnapshot;
      try {
        snapshot = tasks.get(taskId, owner);
      } catch {
        return { delivered: false, reason: 'not_found' };
      }
      const suppressed = suppression(snapshot);
      if (suppressed) return { delivered: false, reason: suppressed };
      const text = formatMonitorNotification({ snapshot, event, budgetBytes: budgetFor(snapshot) });
      try {
        return await hand(snapshot, 'output_matched', text, {
          lane: event.lane,
          eventKey: `${event.monitorId}:${event.sequence}`,
        });
      } catch (error) {
        logger.warn(`task ${snapshot.id}: enqueueing its monitor notification failed`, {
          taskId: snapshot.id,
          error: describeError(error),
        });
        return { delivered: false, reason: 'enqueue_failed', error };
      }
    },
    noteUserInput() {
      consecutiveWakes = 0;
    },
    noteWake() {
      if (wakeCounting === 'external') consecutiveWakes += 1;
    },
    seal() {
      sealed = true;
    },
    get sealed() {
      return sealed || options.isSealed?.() === true;
    },
    get consecutiveWakes() {
      return consecutiveWakes;
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      unsubscribe();
    },
  };
}
