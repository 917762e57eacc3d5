/**
 * `task_list()`: the caller's background tasks, one `<id> [<kind>] <status> — <label>` line each, or
 * `(no background tasks)`. Every live task is listed; finished ones fill the rest, newest first kept —
 * those an earlier runtime ran too, when the store remembers them (`RecordedTasks`).
 */
import { z } from 'zod';
import { presentedStatus } from '../notifications/index.js';
import { isTerminalStatus, type TaskSnapshot } from '../tasks/index.js';
import { shortenText, toSingleLine } from '../text/index.js';
import { limitToolText } from './output-limit.js';
import { ensureActive, type TaskToolsRuntime } from './task-tools-runtime.js';
import {
  defineTool,
  describeToolError,
  type ToolDefinition,
  type ToolResult,
  toolError,
} from './tool-definition.js';

export type TaskListInput = Record<string, never>;

export interface TaskListValue {
  readonly tasks: ReadonlyArray<{
    readonly id: string;
    readonly kind: string;
    readonly status: TaskSnapshot['status'];
    readonly label: string;
  }>;
}

export const TASK_LIST_TOOL_NAME = 'task_list';

export const NO_BACKGROUND_TASKS = '(no background tasks)';

const DESCRIPTION =
  'List your background tasks, one per line: "<id> [<kind>] <status> — <label>". Use it when you have lost track of a task id.';

/** Every live task, plus the most recent finished ones up to `max`, in their original order. */
/** The worker that runs a remote task (its `worker` fact), when it runs on one. */
export function workerOf(snapshot: TaskSnapshot): string | undefined {
  const worker = (snapshot.detail as { readonly worker?: unknown }).worker;
  return typeof worker === 'string' && worker !== '' ? toSingleLine(worker).slice(0, 64) : undefined;
}

function selectListed(snapshots: readonly TaskSnapshot[], max: number): TaskSnapshot[] {
  if (snapshots.length <= max) return [...snapshots];
  const live = snapshots.filter((snapshot) => !isTerminalStatus(snapshot.status));
  const finished = snapshots.filter((snapshot) => isTerminalStatus(snapshot.status));
  const keep = new Set([
    ...live,
    ...finished.slice(Math.max(0, finished.length - Math.max(0, max - live.length))),
  ]);
  return snapshots.filter((snapshot) => keep.has(snapshot));
}

export function formatTaskLine(snapshot: TaskSnapshot, maxLabelChars: number): string {
  const label = shortenText(toSingleLine(snapshot.label), maxLabelChars);
  const worker = workerOf(snapshot);
  const where = worker === undefined ? '' : ` on worker ${worker}`;
  return `${snapshot.id} [${snapshot.kind}] ${presentedStatus(snapshot)}${where} — ${label}`;
}

export function createTaskListTool(runtime: TaskToolsRuntime): ToolDefinition<TaskListInput, TaskListValue> {
  return defineTool<TaskListInput, TaskListValue>({
    name: TASK_LIST_TOOL_NAME,
    description: DESCRIPTION,
    // Strict, as bash is: an unknown key is refused by name, not silently dropped.
    inputSchema: z.strictObject({}) as unknown as z.ZodType<TaskListInput>,
    resultLimitBytes: () => runtime.options.listOutputLimitBytes,
    async execute(_input, context): Promise<ToolResult<TaskListValue>> {
      const limit = runtime.options.listOutputLimitBytes;
      try {
        ensureActive(runtime, TASK_LIST_TOOL_NAME);
        const held = runtime.tasks.list(context.caller).filter((snapshot) => snapshot.isBackgrounded);
        const heldIds = new Set(held.map((snapshot) => snapshot.id));
        // Finished work an earlier runtime ran comes first: it is older than anything this service holds.
        const recorded = (
          runtime.recorded?.list(context.caller, runtime.options.maxListedTasks) ?? []
        ).filter((snapshot) => snapshot.isBackgrounded && !heldIds.has(snapshot.id));
        const background = [...recorded, ...held];
        const listed = selectListed(background, runtime.options.maxListedTasks);
        const value: TaskListValue = {
          tasks: listed.map((snapshot) => ({
            id: snapshot.id,
            kind: snapshot.kind,
            status: snapshot.status,
            label: snapshot.label,
          })),
        };
        if (listed.length === 0) return { text: NO_BACKGROUND_TASKS, isError: false, value };
        const lines = listed.map((snapshot) => formatTaskLine(snapshot, runtime.options.maxLabelChars));
        const omitted = background.length - listed.length;
        if (omitted > 0)
          lines.unshift(`(${omitted} older finished task${omitted === 1 ? '' : 's'} not shown)`);
        return { text: limitToolText(lines.join('\n'), limit), isError: false, value };
      } catch (error) {
        return toolError(limitToolText(describeToolError(error), limit, { keepHead: true }));
      }
    },
  });
}
