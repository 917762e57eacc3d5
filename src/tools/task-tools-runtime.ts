/** What the three task tools share: the service, resolved options, the stop dispatch and the disposed state. */
import type { TaskMonitors } from '../notifications/index.js';
import { ErrandError, type TaskService, type TaskSnapshot } from '../tasks/index.js';
import { ToolsDisposedError } from './errors.js';
import { limitToolText } from './output-limit.js';
import type { RecordedTasks } from './recorded-tasks.js';
import { formatStatusLine } from './status-line.js';
import type { StopDispatch } from './stop-dispatch.js';
import type { ResolvedTaskToolsOptions } from './task-tools-options.js';
import { describeToolError, type ToolContext, type ToolResult, toolError } from './tool-definition.js';

export interface TaskToolsRuntime {
  readonly tasks: TaskService;
  readonly options: ResolvedTaskToolsOptions;
  readonly stop: StopDispatch;
  /** The monitors `task_monitor` starts; absent when the tools were created without `monitors`. */
  readonly monitors?: TaskMonitors;
  /** Aborted when the tools are disposed: pending waits end with them. */
  readonly disposed: AbortSignal;
  /** Finished tasks of an earlier runtime the service does not hold. */
  readonly recorded: RecordedTasks | undefined;
}

/** Throws once the tools are disposed. */
export function ensureActive(runtime: TaskToolsRuntime, toolName: string): void {
  if (runtime.disposed.aborted) throw new ToolsDisposedError(toolName);
}

/** The call's signal combined with disposal. */
export function callSignal(runtime: TaskToolsRuntime, context: ToolContext): AbortSignal {
  return AbortSignal.any([context.signal, runtime.disposed]);
}

/** The byte budget of a call about `taskId`: the producer's, else the controller default. */
export function limitFor(runtime: TaskToolsRuntime, snapshot: TaskSnapshot | undefined): number | undefined {
  return snapshot?.outputLimitBytes ?? runtime.options.defaultOutputLimitBytes;
}

/** The caller-visible snapshot of a raw `task_id`, or undefined (for resolving limits before validation). */
export function peekSnapshot(
  runtime: TaskToolsRuntime,
  rawInput: unknown,
  context: ToolContext,
): TaskSnapshot | undefined {
  const id =
    typeof rawInput === 'object' && rawInput !== null
      ? (rawInput as Record<string, unknown>).task_id
      : undefined;
  if (typeof id !== 'string') return undefined;
  try {
    return runtime.tasks.get(id, context.caller);
  } catch {
    return undefined;
  }
}

/** Renders an error; when the task is known, the answer still ends with its status line. */
export function taskError(
  error: unknown,
  snapshot: TaskSnapshot | undefined,
  limitBytes: number | undefined,
): ToolResult<never> {
  let text = describeToolError(error);
  if (ErrandError.hasCode(error, 'TASK_NOT_FOUND')) {
    text += '. Check the id; task_list shows the tasks you can use.';
  }
  if (snapshot === undefined) return toolError(limitToolText(text, limitBytes, { keepHead: true }));
  return toolError(limitToolText(`${text}\n${formatStatusLine(snapshot)}`, limitBytes));
}
