/**
 * `task_list()`: the caller's background tasks, one `<id> [<kind>] <status> — <label>` line each, or
 * `(no background tasks)`. At most `maxListedTasks` lines (default 50): live tasks first, the newest kept,
 * then finished ones fill the rest, the newest kept — those an earlier runtime ran too, when the store
 * remembers them (`RecordedTasks`). A first line counts what is not shown, so 100k live tasks answer in
 * 50 lines, not megabytes.
 */
import { z } from 'zod';
import { presentedStatus } from '../notifications/index.js';
import { limitsSummaryOf, sandboxSummaryOf } from '../process/index.js';
import { isTerminalStatus, type ScheduleProgress, type TaskSnapshot, taskFact } from '../tasks/index.js';
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
    /** The sandbox it runs in (`workspace-write, network off`); absent when unconfined. */
    readonly sandbox?: string;
    /** Its resource limits and their mechanism (`cgroup-v1: memory 512 MiB`); absent without limits. */
    readonly limits?: string;
    /** A schedule's firings, next due time and missed-firing policy; absent for other kinds. */
    readonly schedule?: ScheduleProgress;
  }>;
}

export const TASK_LIST_TOOL_NAME = 'task_list';

export const NO_BACKGROUND_TASKS = '(no background tasks)';

const DESCRIPTION =
  'List your background tasks, one per line: "<id> [<kind>] <status> — <label>". Use it when you have lost track of a task id.';

/** The worker that runs a remote task (its `worker` fact), when it runs on one. */
export function workerOf(snapshot: TaskSnapshot): string | undefined {
  const worker = (snapshot.detail as { readonly worker?: unknown }).worker;
  return typeof worker === 'string' && worker !== '' ? toSingleLine(worker).slice(0, 64) : undefined;
}

/**
 * At most `max` tasks in their original order: the newest live ones first, then the newest finished ones
 * in what is left.
 */
function selectListed(snapshots: readonly TaskSnapshot[], max: number): TaskSnapshot[] {
  if (snapshots.length <= max) return [...snapshots];
  const live = snapshots.filter((snapshot) => !isTerminalStatus(snapshot.status));
  const finished = snapshots.filter((snapshot) => isTerminalStatus(snapshot.status));
  const keptLive = live.slice(Math.max(0, live.length - max));
  const keep = new Set([
    ...keptLive,
    ...finished.slice(Math.max(0, finished.length - (max - keptLive.length))),
  ]);
  return snapshots.filter((snapshot) => keep.has(snapshot));
}

/** The first line when some tasks are not shown. */
function omittedLine(background: readonly TaskSnapshot[], listed: readonly TaskSnapshot[]): string {
  const shown = new Set(listed);
  let live = 0;
  let finished = 0;
  for (const snapshot of background) {
    if (shown.has(snapshot)) continue;
    if (isTerminalStatus(snapshot.status)) finished += 1;
    else live += 1;
  }
  const plural = (count: number) => (count === 1 ? '' : 's');
  if (live === 0) return `(${finished} older finished task${plural(finished)} not shown)`;
  return `(${live + finished} more task${plural(live + finished)} not shown: ${live} older live, ${finished} finished)`;
}

/** A schedule's progress in words: `every 2 s, 3 times; fired 1 of 3; next at <ISO>; missed firings: run once`. */
export function scheduleProgressText(progress: ScheduleProgress, live: boolean): string {
  const next = progress.nextAt === null ? undefined : `next at ${new Date(progress.nextAt).toISOString()}`;
  return [
    progress.when,
    `fired ${progress.fired} of ${progress.times}`,
    ...(live && next !== undefined ? [next] : []),
    ...(live ? [`missed firings: ${progress.missed === 'skip' ? 'skip' : 'run once'}`] : []),
  ].join('; ');
}

export function formatTaskLine(snapshot: TaskSnapshot, maxLabelChars: number): string {
  const label = shortenText(toSingleLine(snapshot.label), maxLabelChars);
  const worker = workerOf(snapshot);
  const where = worker === undefined ? '' : ` on worker ${worker}`;
  const sandbox = sandboxSummaryOf(snapshot.detail);
  const confinement = sandbox === undefined ? '' : ` (sandbox: ${sandbox})`;
  const limits = limitsSummaryOf(snapshot.detail);
  const limited = limits === undefined ? '' : ` (limits: ${limits})`;
  const progress = taskFact(snapshot, 'schedule');
  const schedule =
    progress === undefined ? '' : ` (${scheduleProgressText(progress, !isTerminalStatus(snapshot.status))})`;
  return `${snapshot.id} [${snapshot.kind}] ${presentedStatus(snapshot)}${where} — ${label}${confinement}${limited}${schedule}`;
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
          tasks: listed.map((snapshot) => {
            const sandbox = sandboxSummaryOf(snapshot.detail);
            const limits = limitsSummaryOf(snapshot.detail);
            const schedule = taskFact(snapshot, 'schedule');
            return {
              id: snapshot.id,
              kind: snapshot.kind,
              status: snapshot.status,
              label: snapshot.label,
              ...(sandbox === undefined ? {} : { sandbox }),
              ...(limits === undefined ? {} : { limits }),
              ...(schedule === undefined ? {} : { schedule }),
            };
          }),
        };
        if (listed.length === 0) return { text: NO_BACKGROUND_TASKS, isError: false, value };
        const lines = listed.map((snapshot) => formatTaskLine(snapshot, runtime.options.maxLabelChars));
        if (background.length > listed.length) lines.unshift(omittedLine(background, listed));
        return { text: limitToolText(lines.join('\n'), limit), isError: false, value };
      } catch (error) {
        return toolError(limitToolText(describeToolError(error), limit, { keepHead: true }));
      }
    },
  });
}
