/**
 * `task_kill(task_id, reason?)`: asks a task to stop at once, through the stop dispatch with initiator
 * `model`; the reason reaches the producer. The model's own kill is answered here, not by a notification:
 * the tool waits briefly for the task to end (taking its delivery claim) and reports the final status.
 * A finished task reports its status without consuming pending output. A producer whose cancel throws
 * makes the call fail, and the task keeps running.
 */
import { z } from 'zod';
import {
  CancelNotSupportedError,
  ErrandError,
  isTerminalStatus,
  TaskNotFoundError,
  type TaskSnapshot,
} from '../tasks/index.js';
import { limitToolText } from './output-limit.js';
import { formatStatusLine } from './status-line.js';
import {
  callSignal,
  ensureActive,
  limitFor,
  peekSnapshot,
  type TaskToolsRuntime,
  taskError,
} from './task-tools-runtime.js';
import { defineTool, type ToolDefinition, type ToolResult } from './tool-definition.js';

export interface TaskKillInput {
  readonly task_id: string;
  readonly reason?: string | undefined;
}

export interface TaskKillValue {
  readonly taskId: string;
  readonly status: TaskSnapshot['status'];
  /** The task's attempt (a resumed task's later run has a higher one). */
  readonly attempt: number;
  /** True when this call requested the stop. */
  readonly stopped: boolean;
}

export const TASK_KILL_TOOL_NAME = 'task_kill';

const DESCRIPTION =
  'Stop a background task that no longer matters. The optional reason is recorded with the stop. A task that has already ended is left as it is and its status is reported.';

// Strict, as bash is: an unknown key is refused by name, not silently dropped.
const inputSchema = z.strictObject({
  task_id: z.string().describe('The id of the background task to stop, for example "bash-3".'),
  reason: z.string().max(1000).optional().describe('Why the task is stopped (recorded; optional).'),
});

function answer(
  text: string,
  snapshot: TaskSnapshot,
  stopped: boolean,
  limit: number | undefined,
): ToolResult<TaskKillValue> {
  return {
    text: limitToolText(`${text}\n${formatStatusLine(snapshot)}`, limit),
    isError: false,
    value: { taskId: snapshot.id, status: snapshot.status, attempt: snapshot.attempt, stopped },
  };
}

export function createTaskKillTool(runtime: TaskToolsRuntime): ToolDefinition<TaskKillInput, TaskKillValue> {
  return defineTool<TaskKillInput, TaskKillValue>({
    name: TASK_KILL_TOOL_NAME,
    description: DESCRIPTION,
    inputSchema,
    resultLimitBytes: (rawInput, context) => limitFor(runtime, peekSnapshot(runtime, rawInput, context)),
    async execute(input, context): Promise<ToolResult<TaskKillValue>> {
      const { tasks, options, stop } = runtime;
      const caller = context.caller;
      let snapshot: TaskSnapshot | undefined;
      try {
        ensureActive(runtime, TASK_KILL_TOOL_NAME);
        snapshot = tasks.get(input.task_id, caller);
        const limit = limitFor(runtime, snapshot);
        if (isTerminalStatus(snapshot.status)) {
          return answer(
            `Task ${snapshot.id} has already ended; nothing was stopped.`,
            snapshot,
            false,
            limit,
          );
        }
        const result = await stop.stopBackgroundTask(snapshot.id, {
          initiator: 'model',
          caller,
          ...(input.reason === undefined ? {} : { reason: input.reason }),
        });
        if (!result.ok) {
          snapshot = result.snapshot ?? snapshot;
          if (result.reason === 'not_found') throw new TaskNotFoundError(input.task_id);
          if (result.reason === 'cancel_not_supported')
            throw new CancelNotSupportedError(snapshot.id, snapshot.kind);
          return answer(
            `Task ${snapshot.id} has already ended; nothing was stopped.`,
            snapshot,
            false,
            limit,
          );
        }
        snapshot = result.snapshot;
        if (!isTerminalStatus(snapshot.status) && options.killSettleMs > 0) {
          // A live waiter takes the delivery claim when the task ends: the answer below is the report.
          try {
            snapshot = await tasks.wait(
              snapshot.id,
              options.killSettleMs,
              caller,
              callSignal(runtime, context),
            );
          } catch (error) {
            if (!ErrandError.hasCode(error, 'WAIT_ABORTED')) throw error;
            snapshot = tasks.get(snapshot.id, caller);
          }
        }
        const text = isTerminalStatus(snapshot.status)
          ? `Stopped task ${snapshot.id}.`
          : `Asked task ${snapshot.id} to stop; it is still stopping. task_output shows when it has ended.`;
        return answer(text, snapshot, true, limit);
      } catch (error) {
        if (snapshot !== undefined) {
          try {
            snapshot = tasks.get(snapshot.id, caller);
          } catch {
            // Keep the last snapshot we had.
          }
        }
        return taskError(error, snapshot, limitFor(runtime, snapshot));
      }
    },
  });
}
