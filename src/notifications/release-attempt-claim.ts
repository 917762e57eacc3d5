/**
 * The same-attempt claim rule: a delivery claim taken for one attempt of a task is returned only while
 * the task is still at that attempt. A resumed task is a new attempt whose claim belongs to whoever
 * received that end; returning it would let a second notification repeat what was already told. The
 * delivery policy (a notification that could not be queued), the AI SDK bridge (one never delivered)
 * and the subagent stop strategy (a waiter's claim handed on) all return claims through here.
 */
import { type Caller, ErrandError, type TaskService } from '../tasks/index.js';

/**
 * `released`: the claim of that attempt was returned (or was not held). `other_attempt`: the task moved
 * on to another attempt, whose claim is left alone. `not_found`: the registry forgot the task (or it is
 * not the caller's), so there is no claim left to return.
 */
export type AttemptClaimRelease = 'released' | 'other_attempt' | 'not_found';

/**
 * Returns the delivery claim of `taskId` if the task is still at `attempt`. Any failure other than the
 * task being gone is thrown for the caller to report.
 */
export function releaseAttemptClaim(
  tasks: Pick<TaskService, 'get' | 'releaseClaim'>,
  taskId: string,
  attempt: number,
  caller: Caller,
): AttemptClaimRelease {
  try {
    if (tasks.get(taskId, caller).attempt !== attempt) return 'other_attempt';
    // The provider checks the attempt again in the same step as the release.
    tasks.releaseClaim(taskId, caller, { attempt });
    return 'released';
  } catch (error) {
    if (ErrandError.hasCode(error, 'TASK_NOT_FOUND')) return 'not_found';
    throw error;
  }
}
