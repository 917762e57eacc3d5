/**
 * The delivery policy: turns a terminal task into at most one `<task-notification>` for its owner's
 * session. It subscribes to one exact owner, suppresses what must not be delivered, takes the one-shot
 * claim (first come wins against readers, waiters and the model's own kill), formats, and hands the
 * notification to the session's queue — returning the claim if the queue refuses it. It owns no queue.
 */
import {
  consoleLogger,
  type Disposer,
  ErrandError,
  InvalidArgumentError,
  isTerminalStatus,
  type Logger,
  type Owner,
  systemClock,
  type TaskKind,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import {
  nestedCheck,
  optionKeys,
  rejectUnknownOptions,
  type UnknownOptionsCheck,
} from '../tasks/option-keys.js';
import { formatGenericNotification } from './format-generic.js';
import { formatterFor } from './format-notification.js';
import { formatWorkflowProgressNotification, type WorkflowProgressEvent } from './format-workflow.js';
import {
  DEFAULT_OUTPUT_TAIL_LIMITS,
  type NotificationFormatter,
  type OutputTailLimits,
} from './notification-format.js';
import { releaseAttemptClaim } from './release-attempt-claim.js';
import { detailString } from './task-facts.js';
import {
  NOTIFICATION_LANES,
  type NotificationEvent,
  type NotificationLane,
  type TaskNotification,
} from './task-notification.js';

/** Recent output without consuming it: a producer's ring buffer or the end of its output file. */
export type OutputTailSource = (snapshot: TaskSnapshot) => string | undefined | Promise<string | undefined>;

/** The default tail source: what the producer published as `detail.outputTail`. */
export const detailOutputTail: OutputTailSource = (snapshot) => detailString(snapshot, 'outputTail');

/**
 * Options of `createDeliveryPolicy`. A key not listed here (or in `outputTail`) is rejected with
 * `UNKNOWN_OPTION`.
 */
export interface DeliveryPolicyOptions {
  readonly tasks: TaskService;
  /** The session whose tasks this policy notifies — exactly this instance, not a reused session id. */
  readonly owner: Owner;
  /** The session's queue. A throw (or a rejection) returns the claim and is logged. */
  readonly enqueue: (notification: TaskNotification) => void | Promise<void>;
  /** The session's current branch generation. Default: `owner.branchGeneration`. */
  readonly currentBranchGeneration?: () => number;
  /** True while the runtime shuts down: nothing is delivered. Default: never. */
  readonly isShuttingDown?: () => boolean;
  /** True once the owner's runtime sealed its notifications (a finished subagent). `seal()` also seals. */
  readonly isSealed?: () => boolean;
  /** The lane when nothing more specific applies. Default `wakeup`. */
  readonly defaultLane?: NotificationLane;
  /** Lanes per kind. A task's own `detail.notificationLane` wins over these. */
  readonly lanes?: Readonly<Partial<Record<TaskKind, NotificationLane>>>;
  /** Lane per task, consulted after `detail.notificationLane` and before `lanes`. */
  readonly laneOf?: (snapshot: TaskSnapshot) => NotificationLane | undefined;
  /**
   * Wake-ups allowed without user input; later notifications take the quiet lane until
   * `noteUserInput()`. Default 3. `Infinity` disables the budget; 0 never wakes.
   */
  readonly wakeBudget?: number;
  /**
   * What counts as a wake-up. `notification` (the default): every notification handed on the wakeup
   * lane. `external`: only `noteWake()` calls — a session runtime calls it once per turn a batch of
   * notifications started, so a burst that wakes the agent once costs one wake-up.
   */
  readonly wakeCounting?: 'notification' | 'external';
  /** The most UTF-8 bytes of one notification (a task's `outputLimitBytes` may lower it). Default 8192. */
  readonly maxNotificationBytes?: number;
  /** Limits of `<output-tail>`; `false` leaves it out. Default 20 lines / 2048 bytes. */
  readonly outputTail?: OutputTailLimits | false;
  /** Where the tail comes from. Default: `detail.outputTail`. Never the model's read cursor. */
  readonly readOutputTail?: OutputTailSource;
  /** Forms per kind, over the built-in ones. */
  readonly formatters?: Readonly<Partial<Record<TaskKind, NotificationFormatter>>>;
  /**
   * Kinds whose stops by the model are notified anyway (a workflow the model stopped through another
   * tool, which then reads "amend it"). Default none: the model's own kill is reported by its tool result.
   */
  readonly notifyModelStops?: readonly TaskKind[];
  /** Epoch-milliseconds clock. Default: the system clock. */
  readonly now?: () => number;
  readonly logger?: Logger;
}

/** Every key of `DeliveryPolicyOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const DELIVERY_POLICY_OPTION_KEYS = optionKeys<DeliveryPolicyOptions>()({
  tasks: true,
  owner: true,
  enqueue: true,
  currentBranchGeneration: true,
  isShuttingDown: true,
  isSealed: true,
  defaultLane: true,
  lanes: true,
  laneOf: true,
  wakeBudget: true,
  wakeCounting: true,
  maxNotificationBytes: true,
  outputTail: true,
  readOutputTail: true,
  formatters: true,
  notifyModelStops: true,
  now: true,
  logger: true,
});

const OUTPUT_TAIL_OPTION_KEYS = optionKeys<OutputTailLimits>()({ maxLines: true, maxBytes: true });

/**
 * Rejects keys of delivery-policy options (or of their `outputTail`) that `known` lacks. Runtimes that
 * hand a caller's policy options on check them with the keys the caller may give (`POLICY_OPTION_KEYS`).
 */
export function rejectUnknownPolicyOptions(
  options: unknown,
  known: readonly string[],
  check: UnknownOptionsCheck,
): void {
  rejectUnknownOptions(options, known, check);
  const tail = (options as { readonly outputTail?: unknown } | null | undefined)?.outputTail;
  if (typeof tail !== 'object' || tail === null) return;
  rejectUnknownOptions(tail, OUTPUT_TAIL_OPTION_KEYS, nestedCheck(check, 'outputTail'));
}

export const DELIVERY_POLICY_DEFAULTS = Object.freeze({
  defaultLane: 'wakeup' as NotificationLane,
  wakeBudget: 3,
  maxNotificationBytes: 8192,
});

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
  | 'already_reported'
  | 'enqueue_failed';

export type DeliveryOutcome =
  | { readonly delivered: true; readonly notification: TaskNotification }
  | { readonly delivered: false; readonly reason: DeliverySkipReason; readonly error?: unknown };

export interface DeliveryPolicy {
  /** Delivers a terminal snapshot (the subscription calls this; tests and resume sweeps may too). Never rejects. */
  deliver(snapshot: TaskSnapshot): Promise<DeliveryOutcome>;
  /** Notifies that a running workflow stalled or needs input. No claim: the task is still running. */
  notifyWorkflowProgress(taskId: string, event: WorkflowProgressEvent): Promise<DeliveryOutcome>;
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

function validateOptions(options: DeliveryPolicyOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object', options);
  }
  rejectUnknownPolicyOptions(options, DELIVERY_POLICY_OPTION_KEYS, { where: 'createDeliveryPolicy' });
  if (
    typeof options.tasks !== 'object' ||
    options.tasks === null ||
    typeof options.tasks.onTaskDone !== 'function'
  ) {
    throw new InvalidArgumentError('tasks', 'a TaskService', options.tasks);
  }
  if (
    typeof options.owner !== 'object' ||
    options.owner === null ||
    typeof options.owner.sessionId !== 'string'
  ) {
    throw new InvalidArgumentError('owner', 'an Owner', options.owner);
  }
  if (typeof options.enqueue !== 'function')
    throw new InvalidArgumentError('enqueue', 'a function', options.enqueue);
  for (const field of [
    'currentBranchGeneration',
    'isShuttingDown',
    'isSealed',
    'laneOf',
    'readOutputTail',
    'now',
  ] as const) {
    if (options[field] !== undefined && typeof options[field] !== 'function') {
      throw new InvalidArgumentError(field, 'a function', options[field]);
    }
  }
  const lanes: Array<[string, unknown]> = [
    ['defaultLane', options.defaultLane],
    ...Object.entries(options.lanes ?? {}).map(([kind, lane]): [string, unknown] => [`lanes.${kind}`, lane]),
  ];
  for (const [field, lane] of lanes) {
    if (lane !== undefined && !NOTIFICATION_LANES.includes(lane as NotificationLane)) {
      throw new InvalidArgumentError(field, '"wakeup" or "quiet"', lane);
    }
  }
  const budget = options.wakeBudget;
  if (
    budget !== undefined &&
    budget !== Number.POSITIVE_INFINITY &&
    (!Number.isSafeInteger(budget) || budget < 0)
  ) {
    throw new InvalidArgumentError('wakeBudget', 'a non-negative integer or Infinity', budget);
  }
  const max = options.maxNotificationBytes;
  if (max !== undefined && (!Number.isSafeInteger(max) || max < 1)) {
    throw new InvalidArgumentError('maxNotificationBytes', 'a positive integer', max);
  }
  const tail = options.outputTail;
  if (tail !== undefined && tail !== false) {
    if (typeof tail !== 'object' || tail === null) {
      throw new InvalidArgumentError('outputTail', 'an object of limits, or false', tail);
    }
    for (const field of ['maxLines', 'maxBytes'] as const) {
      if (!Number.isSafeInteger(tail[field]) || tail[field] < 1) {
        throw new InvalidArgumentError(`outputTail.${field}`, 'a positive integer', tail[field]);
      }
    }
  }
  if (options.wakeCounting !== undefined && !['notification', 'external'].includes(options.wakeCounting)) {
    throw new InvalidArgumentError('wakeCounting', '"notification" or "external"', options.wakeCounting);
  }
  if (options.notifyModelStops !== undefined && !Array.isArray(options.notifyModelStops)) {
    throw new InvalidArgumentError('notifyModelStops', 'an array of task kinds', options.notifyModelStops);
  }
}

function isSuperseded(snapshot: TaskSnapshot): boolean {
  const value = snapshot.detail.supersededBy;
  return value !== undefined && value !== null && value !== false && value !== '';
}

function describeError(error: unknown): string {
  if (ErrandError.isInstance(error)) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** Creates the policy and subscribes it to `owner`'s terminal tasks. */
export function createDeliveryPolicy(options: DeliveryPolicyOptions): DeliveryPolicy {
  validateOptions(options);
  const { tasks, owner, enqueue } = options;
  const logger = options.logger ?? consoleLogger;
  const now = options.now ?? systemClock.now;
  const currentGeneration = options.currentBranchGeneration ?? (() => owner.branchGeneration);
  const isShuttingDown = options.isShuttingDown ?? (() => false);
  const wakeBudget = options.wakeBudget ?? DELIVERY_POLICY_DEFAULTS.wakeBudget;
  const maxBytes = options.maxNotificationBytes ?? DELIVERY_POLICY_DEFAULTS.maxNotificationBytes;
  const tailLimits = options.outputTail ?? DEFAULT_OUTPUT_TAIL_LIMITS;
  const readOutputTail = options.readOutputTail ?? detailOutputTail;
  const notifyModelStops = new Set(options.notifyModelStops ?? []);
  const wakeCounting = options.wakeCounting ?? 'notification';
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

  const laneFor = (snapshot: TaskSnapshot): NotificationLane => {
    const own = snapshot.detail.notificationLane;
    const requested =
      (NOTIFICATION_LANES.includes(own as NotificationLane) ? (own as NotificationLane) : undefined) ??
      options.laneOf?.(snapshot) ??
      options.lanes?.[snapshot.kind] ??
      options.defaultLane ??
      DELIVERY_POLICY_DEFAULTS.defaultLane;
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

  const hand = async (
    snapshot: TaskSnapshot,
    event: NotificationEvent,
    text: string,
  ): Promise<DeliveryOutcome> => {
    const lane = laneFor(snapshot);
    const toolUseId = detailString(snapshot, 'toolUseId');
    const notification: TaskNotification = Object.freeze({
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
    });
    const counted = lane === 'wakeup' && wakeCounting === 'notification';
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

  const claim = (snapshot: TaskSnapshot): true | 'already_reported' | 'not_found' => {
    try {
      return tasks.claim(snapshot.id, owner) ? true : 'already_reported';
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
