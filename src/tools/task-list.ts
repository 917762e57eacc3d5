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
import {
  type BackgroundListing,
  backgroundListingOf,
  type Caller,
  isTerminalStatus,
  type ScheduleProgress,
  type TaskSnapshot,
  taskFact,
} from '../tasks/index.js';
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
 * in what is left — the held ones (newer), then those an earlier runtime ran (`recorded`, older). Reads
 * only the service's bounded listing: its cost does not grow with the live tasks. Returns the tasks
 * shown and the first line saying what is not, if anything.
 */
function selectListed(
  recorded: readonly TaskSnapshot[],
  held: BackgroundListing,
  max: number,
): { listed: TaskSnapshot[]; omitted: string | undefined } {
  const live = held.tasks.filter((snapshot) => !isTerminalStatus(snapshot.status));
  const heldFinished = held.tasks.filter((snapshot) => isTerminalStatus(snapshot.status));
  const keptLive = live.slice(Math.max(0, live.length - max));
  const room = max - keptLive.length;
  const keptHeld = heldFinished.slice(Math.max(0, heldFinished.length - room));
  const keptRecorded = recorded.slice(Math.max(0, recorded.length - (room - keptHeld.length)));
  const keep = new Set([...keptLive, ...keptHeld]);
  const listed = [...keptRecorded, ...held.tasks.filter((snapshot) => keep.has(snapshot))];
  const omittedLive = held.live - keptLive.length;
  const omittedFinished = held.finished + recorded.length - keptHeld.length - keptRecorded.length;
  const plural = (count: number) => (count === 1 ? '' : 's');
  const all = omittedLive + omittedFinished;
  const omitted =
    all === 0
      ? undefined
      : omittedLive === 0
        ? `(${omittedFinished} older finished task${plural(omittedFinished)} not shown)`
        : `(${all} more task${plural(all)} not shown: ${omittedLive} older live, ${omittedFinished} finished)`;
  return { listed, omitted };
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

/** Whether the service holds `id` (an earlier runtime's record it holds too is listed once, as held). */
function isHeld(runtime: TaskToolsRuntime, id: string, caller: Caller): boolean {
  try {
    runtime.tasks.get(id, caller);
    return true;
  } catch {
    return false;
  }
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
        const max = runtime.options.maxListedTasks;
        const held =
          runtime.tasks.listBackground?.(context.caller, max) ??
          backgroundListingOf(runtime.tasks.list(context.caller), max);
        // Finished work an earlier runtime ran comes first: it is older than anything this service holds.
        const recorded = (runtime.recorded?.list(context.caller, max) ?? []).filter(
          (snapshot) => snapshot.isBackgrounded && !isHeld(runtime, snapshot.id, context.caller),
        );
        const { listed, omitted } = selectListed(recorded, held, max);
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
        if (omitted !== undefined) lines.unshift(omitted);
        return { text: limitToolText(lines.join('\n'), limit), isError: false, value };
      } catch (error) {
        return toolError(limitToolText(describeToolError(error), limit, { keepHead: true }));
      }
    },
  });
}
