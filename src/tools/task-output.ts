/**
 * `task_output(task_id, wait?, timeout_ms?)`: the output of a task since the last read (streaming tasks)
 * or its result once it has ended (final-output tasks), always ending with `[status: ...]`. It does not
 * block unless `wait: true`; a wait that times out reports the task running and leaves it running.
 * Reading a finished task takes its delivery claim, so no notification repeats what the model read.
 */
import { z } from 'zod';
import { ErrandError, isTerminalStatus, type TaskSnapshot, taskFact } from '../tasks/index.js';
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

export interface TaskOutputInput {
  readonly task_id: string;
  readonly wait?: boolean | undefined;
  readonly timeout_ms?: number | undefined;
}

export interface TaskOutputValue {
  readonly taskId: string;
  readonly status: TaskSnapshot['status'];
  /** The task's attempt (a resumed task's later run has a higher one). */
  readonly attempt: number;
}

export const TASK_OUTPUT_TOOL_NAME = 'task_output';

function inputSchema(runtime: TaskToolsRuntime) {
  const { defaultWaitMs, maxWaitMs } = runtime.options;
  // Strict, as bash is: an unknown key is refused by name, not silently dropped.
  return z.strictObject({
    task_id: z.string().describe('The id of a background task, for example "bash-3".'),
    wait: z
      .boolean()
      .optional()
      .describe('Wait for the task to end before answering. Default false: answer at once.'),
    timeout_ms: z
      .number()
      .positive()
      .optional()
      .describe(
        `How long to wait when wait is true, in milliseconds. Default ${defaultWaitMs}; at most ${maxWaitMs} (longer values are capped).`,
      ),
  });
}

const DESCRIPTION = [
  'Read the output of a background task.',
  'For a streaming task (a command) it returns the output since your last read; for a task with a final result (a subagent) it returns the result once the task has ended.',
  'The answer always ends with a [status: ...] line.',
  'It does not block unless wait is true; a wait that times out reports the task still running and does not stop it.',
].join(' ');

function bodyOf(text: string, snapshot: TaskSnapshot): string {
  if (!snapshot.finalOutput) return text === '' ? '(no new output)' : text;
  if (!isTerminalStatus(snapshot.status)) return '(no result yet: the result is returned once the task ends)';
  const result = text === '' ? (snapshot.resultText ?? '') : text;
  return result === '' ? '(no output)' : result;
}

export function createTaskOutputTool(
  runtime: TaskToolsRuntime,
): ToolDefinition<TaskOutputInput, TaskOutputValue> {
  return defineTool<TaskOutputInput, TaskOutputValue>({
    name: TASK_OUTPUT_TOOL_NAME,
    description: DESCRIPTION,
    inputSchema: inputSchema(runtime),
    resultLimitBytes: (rawInput, context) => limitFor(runtime, peekSnapshot(runtime, rawInput, context)),
    async execute(input, context): Promise<ToolResult<TaskOutputValue>> {
      const { tasks, options } = runtime;
      const caller = context.caller;
      let snapshot: TaskSnapshot | undefined;
      try {
        ensureActive(runtime, TASK_OUTPUT_TOOL_NAME);
        snapshot = tasks.get(input.task_id, caller);
        let note: string | undefined;
        if (input.wait === true && !isTerminalStatus(snapshot.status)) {
          const timeoutMs = Math.min(Math.ceil(input.timeout_ms ?? options.defaultWaitMs), options.maxWaitMs);
          try {
            snapshot = await tasks.wait(snapshot.id, timeoutMs, caller, callSignal(runtime, context));
            if (!isTerminalStatus(snapshot.status)) note = `waited ${timeoutMs} ms; still running`;
          } catch (error) {
            if (!ErrandError.hasCode(error, 'WAIT_ABORTED')) throw error;
            note = 'the wait was interrupted';
            snapshot = tasks.get(snapshot.id, caller);
          }
        }
        const before = snapshot;
        let { text, snapshot: after } = await tasks.read(before.id, caller);
        if (!isTerminalStatus(before.status) && isTerminalStatus(after.status)) {
          // It ended while we read: collect the rest too, so the status we show comes with all the output.
          const rest = await tasks.read(before.id, caller);
          text += rest.text;
          after = rest.snapshot;
        }
        snapshot = after;
        if (isTerminalStatus(after.status)) note = undefined;
        const error =
          isTerminalStatus(after.status) && after.error !== undefined ? `\nerror: ${after.error}` : '';
        const limit = limitFor(runtime, after);
        const outputFile = taskFact(after, 'outputFile');
        const body = `${bodyOf(text, after)}${error}`;
        const status = formatStatusLine(after, note);
        const whole = body.endsWith('\n') ? `${body}${status}` : `${body}\n${status}`;
        return {
          text: limitToolText(whole, limit, outputFile === undefined ? {} : { outputFile }),
          isError: false,
          value: { taskId: after.id, status: after.status, attempt: after.attempt },
          // The answer shows how the task ended, with its output or result: its notification would repeat it.
          ...(isTerminalStatus(after.status)
            ? { taskEnds: [{ taskId: after.id, attempt: after.attempt }] }
            : {}),
        };
      } catch (error) {
        return taskError(error, snapshot, limitFor(runtime, snapshot));
      }
    },
  });
}
