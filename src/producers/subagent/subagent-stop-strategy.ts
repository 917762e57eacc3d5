/**
 * The stop strategy of kind `agent` for the stop dispatch.
 *
 * The second seed's rule — "a subagent's stop notification that cannot be enqueued restores the task
 * table and reports the error" — comes from a runtime that marks the task stopped in its table before
 * the stop is real and then queues a "stopped" notification itself. In Errand the registry's status is
 * a fact reported by the producer (first outcome wins) and the notification is minted by the parent
 * session's delivery policy, so the rule means: when a person (or a sweep) stops a subagent, the stop
 * waits briefly for the subagent to end and for its notification to be queued; if queueing fails, the
 * registry's delivery claim — the "notified" entry of the task table — is returned, so the result is
 * not marked delivered and stays collectible with task_output (or by a later delivery), and the stop
 * reports `STOP_NOTIFICATION_FAILED` instead of a success that would hide the lost notification.
 * The status itself stays `killed`: the subagent really stopped, and saying otherwise would lie.
 *
 * A stop by the model is answered by task_kill's own result, so it takes the default path.
 */
import { type DeliveryPolicy, releaseAttemptClaim } from '../../notifications/index.js';
import { isTerminalStatus, MAX_TIMER_DELAY_MS, type TaskSnapshot } from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';
import type { StopResult, StopStrategy, StopStrategyContext } from '../../tools/index.js';
import { StopNotificationFailedError } from './errors.js';

/** The options of `createSubagentStopStrategy`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const subagentStopStrategyOptions = defineOptions('createSubagentStopStrategy', {
  /** The delivery policy of the parent session that owns a subagent task. */
  policyOf: option.func<(sessionId: string) => DeliveryPolicy | undefined>(),
  /** How long the stop waits for the subagent to end (at most a timer's longest wait). 0: never wait. */
  stopSettleMs: option.required(option.integer({ min: 0 })),
});

/** Options of `createSubagentStopStrategy`. */
export type SubagentStopStrategyOptions = OptionsInput<typeof subagentStopStrategyOptions.rules>;

export function createSubagentStopStrategy(options: SubagentStopStrategyOptions): StopStrategy {
  const { policyOf, stopSettleMs } = subagentStopStrategyOptions.resolve(options);
  return async (context) => {
    const { snapshot, request } = context;
    const owner = snapshot.ownerSessionId;
    const policy = owner === undefined ? undefined : policyOf?.(owner);
    if (request.initiator === 'model' || policy === undefined || stopSettleMs === 0) {
      return context.defaultStop();
    }
    return stopAndReport(context, policy, Math.min(stopSettleMs, MAX_TIMER_DELAY_MS));
  };
}

async function stopAndReport(
  context: StopStrategyContext,
  policy: DeliveryPolicy,
  settleMs: number,
): Promise<StopResult> {
  const { tasks, snapshot, request } = context;
  // The waiter is registered while the task is live, so the settlement hands its delivery claim to us
  // (live waiters take delivery before any notifier) and we can hand it on and see what happens to it.
  const abandon = new AbortController();
  const ending = tasks.wait(snapshot.id, settleMs, request.caller, abandon.signal).then(
    (ended) => ended,
    () => undefined,
  );
  let result: StopResult;
  try {
    result = await context.defaultStop();
  } catch (error) {
    abandon.abort();
    await handOn(tasks, policy, request.caller, await ending);
    throw error;
  }
  if (!result.ok) {
    abandon.abort();
    await handOn(tasks, policy, request.caller, await ending);
    return result;
  }
  const ended = await ending;
  if (ended === undefined || !isTerminalStatus(ended.status)) {
    // A slow stop: the policy notifies when the subagent ends.
    return result;
  }
  const delivery = await handOn(tasks, policy, request.caller, ended);
  if (delivery !== undefined) throw new StopNotificationFailedError(snapshot.id, delivery);
  return { ok: true, snapshot: currentSnapshot(context, ended) };
}

/**
 * Returns the claim our waiter took and lets the owner's policy deliver the notification. Resolves to
 * the enqueue error when the notification could not be queued (the policy returned the claim again).
 */
async function handOn(
  tasks: StopStrategyContext['tasks'],
  policy: DeliveryPolicy,
  caller: StopStrategyContext['request']['caller'],
  ended: TaskSnapshot | undefined,
): Promise<unknown> {
  if (ended === undefined || !isTerminalStatus(ended.status)) return undefined;
  // Resumed meanwhile, the claim belongs to the newer attempt, not to our waiter; forgotten, there is none.
  if (releaseAttemptClaim(tasks, ended.id, ended.attempt, caller) !== 'released') return undefined;
  const delivery = await policy.deliver(ended);
  if (!delivery.delivered && delivery.reason === 'enqueue_failed') return delivery.error ?? 'enqueue failed';
  return undefined;
}

function currentSnapshot(context: StopStrategyContext, fallback: TaskSnapshot): TaskSnapshot {
  try {
    return context.tasks.get(fallback.id, context.request.caller);
  } catch {
    return fallback;
  }
}
