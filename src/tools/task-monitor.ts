/**
 * `task_monitor(task_id, pattern?, ignore_case?, every_line?, lane?, max?, from?, stop?)`: watches a
 * running background task's output and sends the model the lines that match, as `<task-notification>`s
 * through the same inbox as every other notification — quiet by default, coalesced, rate-limited and
 * bounded (see `createTaskMonitors`). The monitor ends with the task; `stop: true` ends it sooner.
 */
import { z } from 'zod';
import { ErrandError, isTerminalStatus, type TaskSnapshot } from '../tasks/index.js';
import { limitToolText } from './output-limit.js';
import { formatStatusLine } from './status-line.js';
import {
  ensureActive,
  limitFor,
  peekSnapshot,
  type TaskToolsRuntime,
  taskError,
} from './task-tools-runtime.js';
import { defineTool, type ToolDefinition, type ToolResult } from './tool-definition.js';

export interface TaskMonitorInput {
  readonly task_id: string;
  readonly pattern?: string | undefined;
  readonly ignore_case?: boolean | undefined;
  readonly every_line?: boolean | undefined;
  readonly lane?: 'quiet' | 'wakeup' | undefined;
  readonly max?: number | undefined;
  readonly from?: 'start' | 'now' | undefined;
  readonly stop?: boolean | undefined;
}

export interface TaskMonitorValue {
  readonly taskId: string;
  /** The monitor started (absent when the call stopped monitors). */
  readonly monitorId?: string;
  /** How many monitors the call stopped (with `stop: true`). */
  readonly stopped?: number;
}

export const TASK_MONITOR_TOOL_NAME = 'task_monitor';

function inputSchema(runtime: TaskToolsRuntime) {
  const limits = runtime.monitors!.limits;
  return z.strictObject({
    task_id: z.string().describe('The id of a running background task, for example "bash-3".'),
    pattern: z
      .string()
      .min(1)
      .max(limits.maxPatternChars)
      .optional()
      .describe(
        'A JavaScript regular expression; each output line that matches is sent to you, for example "error|FAIL". No backreferences, and no repeated group that itself repeats.',
      ),
    ignore_case: z.boolean().optional().describe('Match the pattern regardless of case. Default false.'),
    every_line: z.boolean().optional().describe('Send every output line instead of matching a pattern.'),
    lane: z
      .enum(['quiet', 'wakeup'])
      .optional()
      .describe(
        'quiet (default): you see the lines with your next request; wakeup: they wake you when you are idle.',
      ),
    max: z
      .number()
      .int()
      .positive()
      .max(limits.maxNotificationsLimit)
      .optional()
      .describe(
        `Notifications before the monitor stops. Default ${limits.defaultMaxNotifications}; at most ${limits.maxNotificationsLimit}.`,
      ),
    from: z
      .enum(['start', 'now'])
      .optional()
      .describe('start (default): also the lines printed so far; now: only lines printed from now on.'),
    stop: z.boolean().optional().describe("Stop this task's monitors instead of starting one."),
  });
}

function description(runtime: TaskToolsRuntime): string {
  const limits = runtime.monitors!.limits;
  return [
    "Watch a running background task's output and be sent the lines that match a pattern (or every line) as <task-notification>s while it runs.",
    `Lines that arrive together come in one notification, at most ${limits.maxNotificationsPerMinute} a minute and max in total (default ${limits.defaultMaxNotifications}); lines not shown are counted, and task_output reads them.`,
    'The monitor ends with the task, whose end is notified as usual. Use it instead of polling task_output for a line you are waiting for.',
  ].join(' ');
}

function answer(text: string, snapshot: TaskSnapshot, value: TaskMonitorValue, limit: number | undefined) {
  return {
    text: limitToolText(`${text}\n${formatStatusLine(snapshot)}`, limit),
    isError: false,
    value,
  };
}

export function createTaskMonitorTool(
  runtime: TaskToolsRuntime,
): ToolDefinition<TaskMonitorInput, TaskMonitorValue> {
  return defineTool<TaskMonitorInput, TaskMonitorValue>({
    name: TASK_MONITOR_TOOL_NAME,
    description: description(runtime),
    inputSchema: inputSchema(runtime),
    resultLimitBytes: (rawInput, context) => limitFor(runtime, peekSnapshot(runtime, rawInput, context)),
    async execute(input, context): Promise<ToolResult<TaskMonitorValue>> {
      const { tasks } = runtime;
      const monitors = runtime.monitors!;
      let snapshot: TaskSnapshot | undefined;
      try {
        ensureActive(runtime, TASK_MONITOR_TOOL_NAME);
        snapshot = tasks.get(input.task_id, context.caller);
        const limit = limitFor(runtime, snapshot);
        const owner = context.caller;
        if (owner === undefined) {
          throw new ErrandError(
            'MONITOR_NEEDS_SESSION',
            'caller',
            'A monitor sends its lines to the session that owns the task; this call comes from no session',
          );
        }
        if (input.stop === true) {
          const stopped = monitors.stop(owner, snapshot.id);
          const text =
            stopped === 0
              ? `Task ${snapshot.id} had no monitor of yours.`
              : `Stopped ${stopped === 1 ? 'the monitor' : `${stopped} monitors`} of task ${snapshot.id}.`;
          return answer(text, snapshot, { taskId: snapshot.id, stopped }, limit);
        }
        if (isTerminalStatus(snapshot.status)) {
          return answer(
            `Task ${snapshot.id} has already ended; there is nothing left to monitor. Read it with task_output.`,
            snapshot,
            { taskId: snapshot.id },
            limit,
          );
        }
        const started = await monitors.start(owner, {
          taskId: snapshot.id,
          pattern: input.pattern,
          ignoreCase: input.ignore_case,
          everyLine: input.every_line,
          lane: input.lane,
          max: input.max,
          from: input.from,
        });
        const what = started.matching === 'every line' ? 'every line' : `lines matching ${started.matching}`;
        const how =
          started.lane === 'wakeup' ? 'waking you' : 'quietly (you see them with your next request)';
        const text = `Monitoring task ${snapshot.id} (${started.monitorId}): ${what}, sent ${how}, at most ${started.max} notifications. It ends with the task.`;
        return answer(
          text,
          tasks.get(snapshot.id, owner),
          { taskId: snapshot.id, monitorId: started.monitorId },
          limit,
        );
      } catch (error) {
        return taskError(error, snapshot, limitFor(runtime, snapshot));
      }
    },
  });
}
