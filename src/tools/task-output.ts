/**
 * `task_output(task_id, wait?, timeout_ms?, tail_bytes?, tail_lines?)`: the output of a task since the
 * last read (streaming tasks) or its result once it has ended (final-output tasks), always ending with
 * `[status: ...]`. It does not block unless `wait: true`; a wait that times out reports the task running
 * and leaves it running. With `tail_bytes` or `tail_lines` it shows the newest output instead, through an
 * observation cursor, without moving the model's read position. Answering with a finished task's end
 * takes its delivery claim, so no notification repeats what the model read.
 */
import { z } from 'zod';
import { type Caller, ErrandError, isTerminalStatus, type TaskSnapshot, taskFact } from '../tasks/index.js';
import { formatTruncationMarker, lastLines, stripTerminalEscapes, utf8ByteLength } from '../text/index.js';
import { limitToolText } from './output-limit.js';
import {
  compileReadiness,
  formatReadiness,
  READINESS_DEFAULTS,
  type ReadinessInput,
  type ReadinessLimits,
  type ReadinessResult,
  readinessSchema,
  waitForReadiness,
} from './readiness.js';
import { RECORDED_OUTPUT_READ_BYTES } from './recorded-tasks.js';
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
  readonly tail_bytes?: number | undefined;
  readonly tail_lines?: number | undefined;
  readonly wait_for?: ReadinessInput | undefined;
}

export interface TaskOutputValue {
  readonly taskId: string;
  readonly status: TaskSnapshot['status'];
  /** With `wait_for`: how the wait ended (`ready`, `timeout`, `ended`, `aborted`). */
  readonly readiness?: ReadinessResult['outcome'];
  /** The task's attempt (a resumed task's later run has a higher one). */
  readonly attempt: number;
}

export const TASK_OUTPUT_TOOL_NAME = 'task_output';

/** The readiness limits of these tools. */
export function readinessLimits(runtime: TaskToolsRuntime): ReadinessLimits {
  return {
    ...READINESS_DEFAULTS,
    pollMs: runtime.options.readinessPollMs,
    hosts: runtime.options.readinessHosts,
  };
}

function inputSchema(runtime: TaskToolsRuntime) {
  const { defaultWaitMs, maxWaitMs, maxTailBytes, maxTailLines } = runtime.options;
  // Strict, as bash is: an unknown key is refused by name, not silently dropped.
  return z
    .strictObject({
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
          `How long to wait when wait is true or wait_for is given, in milliseconds. Default ${defaultWaitMs}; at most ${maxWaitMs} (longer values are capped).`,
        ),
      wait_for: readinessSchema(readinessLimits(runtime))
        .optional()
        .describe(
          'Wait until the running task is ready, then answer at once: an output line matches `pattern`, or `port` accepts a TCP connection, or `url` answers `status` (default any 2xx). Give exactly one. Answers at that moment with the matching line or address, at timeout_ms with what was seen, or with the ending if the task ends first.',
        ),
      tail_bytes: z
        .number()
        .int()
        .positive()
        .max(maxTailBytes)
        .optional()
        .describe(
          `Show only the newest this many bytes of output, without moving your read position (at most ${maxTailBytes}).`,
        ),
      tail_lines: z
        .number()
        .int()
        .positive()
        .max(maxTailLines)
        .optional()
        .describe(
          `Show only the last this many lines of output, without moving your read position (at most ${maxTailLines}).`,
        ),
    })
    .refine((input) => input.tail_bytes === undefined || input.tail_lines === undefined, {
      message: 'give tail_bytes or tail_lines, not both',
      path: ['tail_lines'],
    })
    .refine((input) => input.wait_for === undefined || input.wait !== true, {
      message: 'give wait or wait_for, not both (wait_for also answers when the task ends)',
      path: ['wait_for'],
    });
}

const DESCRIPTION = [
  'Read the output of a background task.',
  'For a streaming task (a command) it returns the output since your last read; for a task with a final result (a subagent) it returns the result once the task has ended.',
  'The answer always ends with a [status: ...] line.',
  'It does not block unless wait is true; a wait that times out reports the task still running and does not stop it.',
  'With tail_lines or tail_bytes it shows only the newest output and leaves your read position where it was.',
  'With wait_for it waits until a started server or watcher is ready (a line, a port, a URL) in one call: use it instead of sleep-and-curl loops.',
].join(' ');

/** The newest output of a task, read through an observation cursor: the model's read does not move. */
async function readTail(
  runtime: TaskToolsRuntime,
  snapshot: TaskSnapshot,
  caller: Caller,
  input: TaskOutputInput,
): Promise<string> {
  const { maxTailBytes } = runtime.options;
  const back = input.tail_bytes ?? maxTailBytes;
  const cursor = await runtime.tasks.openCursor(snapshot.id, caller, { from: 'end', tailBytes: back });
  let read: Awaited<ReturnType<typeof cursor.read>>;
  try {
    read = await cursor.read({ maxBytes: Math.max(4, back) });
  } finally {
    cursor.close();
  }
  if (read.stream === 'none')
    return '(this task offers no output to tail: read it without tail_lines or tail_bytes)';
  if (read.stream === 'final' && !isTerminalStatus(read.status)) {
    return '(no result yet: the result is returned once the task ends)';
  }
  if (read.end === 0) return '(no output yet)';
  const plain = stripTerminalEscapes(read.text);
  const lines = input.tail_lines;
  const text = lines === undefined ? plain : lastLines(plain, lines);
  const what =
    lines === undefined
      ? `the newest ${utf8ByteLength(text)} bytes`
      : `the last ${lines === 1 ? 'line' : `${lines} lines`}`;
  return `[${what} of ${read.end} bytes of output; your read position did not move]\n${text}`;
}

function bodyOf(text: string, snapshot: TaskSnapshot): string {
  if (!snapshot.finalOutput) return text === '' ? '(no new output)' : text;
  if (!isTerminalStatus(snapshot.status)) return '(no result yet: the result is returned once the task ends)';
  const result = text === '' ? (snapshot.resultText ?? '') : text;
  return result === '' ? '(no output)' : result;
}

/**
 * The answer for a task only the store remembers (an earlier runtime ran it): its recorded status and the
 * end of its output file. It shows the model how the task ended, like any read of a finished task.
 */
function answerFromRecord(
  runtime: TaskToolsRuntime,
  taskId: string,
  caller: Caller,
): ToolResult<TaskOutputValue> | undefined {
  const limit = runtime.options.defaultOutputLimitBytes;
  const found = runtime.recorded?.read(taskId, caller, limit ?? RECORDED_OUTPUT_READ_BYTES);
  if (found === undefined) return undefined;
  const { snapshot } = found;
  const outputFile = taskFact(snapshot, 'outputFile');
  const skipped = (found.totalBytes ?? 0) - (found.fromBytes ?? 0) - Buffer.byteLength(found.text, 'utf8');
  const text =
    skipped > 0
      ? `${formatTruncationMarker({ skippedBytes: skipped, ...(outputFile === undefined ? {} : { outputFile }) })}\n${found.text}`
      : found.text;
  const error = snapshot.error === undefined ? '' : `\nerror: ${snapshot.error}`;
  const body = `${bodyOf(text, snapshot)}${error}`;
  const status = formatStatusLine(snapshot, 'recorded by an earlier runtime');
  const whole = body.endsWith('\n') ? `${body}${status}` : `${body}\n${status}`;
  return {
    text: limitToolText(whole, limit, outputFile === undefined ? {} : { outputFile }),
    isError: false,
    value: { taskId: snapshot.id, status: snapshot.status, attempt: snapshot.attempt },
    // Every recorded attempt: the model now knows how the task ended.
    taskEnds: [{ taskId: snapshot.id, attempt: undefined }],
  };
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
        try {
          snapshot = tasks.get(input.task_id, caller);
        } catch (error) {
          // Not this service's: the store may remember it from an earlier runtime.
          const recorded = ErrandError.hasCode(error, 'TASK_NOT_FOUND')
            ? answerFromRecord(runtime, input.task_id, caller)
            : undefined;
          if (recorded !== undefined) return recorded;
          throw error;
        }
        let note: string | undefined;
        let readiness: { line: string; outcome: ReadinessResult['outcome'] } | undefined;
        if (input.wait_for !== undefined && !isTerminalStatus(snapshot.status)) {
          const probe = compileReadiness(input.wait_for, readinessLimits(runtime), 'wait_for');
          const timeoutMs = Math.min(Math.ceil(input.timeout_ms ?? options.defaultWaitMs), options.maxWaitMs);
          const result = await waitForReadiness({
            tasks,
            taskId: snapshot.id,
            caller,
            probe,
            timeoutMs,
            signal: callSignal(runtime, context),
            clock: options.clock,
            limits: readinessLimits(runtime),
          });
          readiness = { line: formatReadiness(result, probe), outcome: result.outcome };
          snapshot = tasks.get(snapshot.id, caller);
        } else if (input.wait_for !== undefined) {
          // Checked even for a finished task: a bad condition is an error whatever the state.
          compileReadiness(input.wait_for, readinessLimits(runtime), 'wait_for');
          readiness = { line: '[not ready: the task had already ended]', outcome: 'ended' };
        }
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
        let text: string;
        let after: TaskSnapshot;
        const tail = input.tail_bytes !== undefined || input.tail_lines !== undefined;
        if (tail) {
          // A finished task's end is read first: its status then comes with all of its output.
          after = tasks.get(before.id, caller);
          text = await readTail(runtime, after, caller, input);
          // The answer shows the model how it ended: no notification need repeat it.
          if (isTerminalStatus(after.status)) tasks.claim(after.id, caller);
        } else {
          ({ text, snapshot: after } = await tasks.read(before.id, caller));
          if (!isTerminalStatus(before.status) && isTerminalStatus(after.status)) {
            // It ended while we read: collect the rest too, so the status we show comes with all the output.
            const rest = await tasks.read(before.id, caller);
            text += rest.text;
            after = rest.snapshot;
          }
        }
        snapshot = after;
        if (isTerminalStatus(after.status)) note = undefined;
        const error =
          isTerminalStatus(after.status) && after.error !== undefined ? `\nerror: ${after.error}` : '';
        const limit = limitFor(runtime, after);
        const outputFile = taskFact(after, 'outputFile');
        const body = `${tail ? text : bodyOf(text, after)}${error}`;
        const status =
          readiness === undefined
            ? formatStatusLine(after, note)
            : `${readiness.line}\n${formatStatusLine(after, note)}`;
        const whole = body.endsWith('\n') ? `${body}${status}` : `${body}\n${status}`;
        return {
          text: limitToolText(whole, limit, outputFile === undefined ? {} : { outputFile }),
          isError: false,
          value: {
            taskId: after.id,
            status: after.status,
            attempt: after.attempt,
            ...(readiness === undefined ? {} : { readiness: readiness.outcome }),
          },
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
