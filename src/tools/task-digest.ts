/**
 * The task digest: the authoritative list of a session's live background work — schedules included — and
 * of the endings it has not been told yet, small and bounded. A harness hands it to the model after it
 * compacts or summarises the conversation, when the model would otherwise forget its tasks and start them
 * again. Past its byte cap it switches to a compact form (ids only, grouped) that still names every live
 * task once; past that, the newest live tasks are kept and the rest counted.
 *
 * Reading the digest claims nothing: the endings it lists are still delivered by their notifications.
 */
import { z } from 'zod';
import {
  type Caller,
  isTerminalStatus,
  type TaskService,
  type TaskSnapshot,
  taskFact,
} from '../tasks/index.js';
import { truncateUtf8Tail, utf8ByteLength } from '../text/index.js';
import type { TaskToolsRuntime } from './task-tools-runtime.js';
import { defineTool, type ToolDefinition, type ToolResult } from './tool-definition.js';

import type { UntoldEnding } from './untold-ending.js';

export type { UntoldEnding };

export interface TaskDigestInput {
  /** Every task the caller may see (`TaskService.list(caller)`). */
  readonly tasks: readonly TaskSnapshot[];
  /** Endings queued and not yet delivered; terminal tasks whose claim nobody took are added to them. */
  readonly untold?: readonly UntoldEnding[];
  /** The byte cap of the whole text (at least 256). */
  readonly maxBytes: number;
  /** Characters of a label in the full form. Default 80. */
  readonly maxLabelChars?: number;
  /** Epoch ms, for running times. */
  readonly now: number;
}

export interface TaskDigest {
  readonly text: string;
  /** Ids of the live tasks, oldest first. */
  readonly live: readonly string[];
  /** Ids of the endings not yet told. */
  readonly untold: readonly string[];
  /** `full`, `compact` (ids only), or `cut` (the newest live ids, the rest counted). */
  readonly form: 'full' | 'compact' | 'cut';
}

export const DEFAULT_TASK_DIGEST_BYTES = 4096;
export const TASK_DIGEST_TOOL_NAME = 'task_digest';

const OPEN = '<task-digest>';
const CLOSE = '</task-digest>';
const PREAMBLE =
  'Your background work as the runtime knows it now. This list is authoritative: earlier mentions in the conversation may be stale or summarised away.';
const ADVICE =
  'Do not start these again: read them with task_output, stop them with task_kill, see all with task_list.';

function shorten(text: string, max: number): string {
  const single = text.replace(/\s+/g, ' ').trim();
  return single.length > max ? `${single.slice(0, Math.max(1, max - 3))}...` : single;
}

function duration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60}s`;
  return `${Math.floor(minutes / 60)}h${minutes % 60}m`;
}

function liveLine(task: TaskSnapshot, now: number, maxLabelChars: number): string {
  const facts: string[] = [];
  const summary = taskFact(task, 'summary');
  if (summary !== undefined) facts.push(shorten(summary, 160));
  const pid = taskFact(task, 'pid');
  if (pid !== undefined) facts.push(`pid ${pid}`);
  const extra = facts.length === 0 ? '' : ` (${facts.join('; ')})`;
  return `- ${task.id} [${task.kind}] ${task.status} for ${duration(now - task.startedAt)} — ${shorten(task.label, maxLabelChars)}${extra}`;
}

function endedLine(task: TaskSnapshot | undefined, ending: UntoldEnding, maxLabelChars: number): string {
  const status = task === undefined ? 'ended' : task.status;
  return `- ${ending.taskId} ${status} — ${shorten(task?.label ?? ending.label, maxLabelChars)} (its notification follows; task_output reads it now)`;
}

/** Builds the digest: the full form if it fits `maxBytes`, else the compact form, else the cut one. */
export function formatTaskDigest(input: TaskDigestInput): TaskDigest {
  const maxBytes = Math.max(256, input.maxBytes);
  const maxLabelChars = input.maxLabelChars ?? 80;
  const byId = new Map(input.tasks.map((task) => [task.id as string, task]));
  const live = input.tasks.filter((task) => !isTerminalStatus(task.status) && task.isBackgrounded);
  const untold: UntoldEnding[] = [];
  const seen = new Set<string>();
  for (const ending of input.untold ?? []) {
    if (seen.has(ending.taskId)) continue;
    // A task live again (a resumed one) is listed as live.
    const task = byId.get(ending.taskId);
    if (task !== undefined && !isTerminalStatus(task.status)) continue;
    seen.add(ending.taskId);
    untold.push(ending);
  }
  for (const task of input.tasks) {
    if (isTerminalStatus(task.status) && !task.reported && task.isBackgrounded && !seen.has(task.id)) {
      seen.add(task.id);
      untold.push({ taskId: task.id, label: task.label });
    }
  }
  const liveIds = live.map((task) => task.id as string);
  const untoldIds = untold.map((ending) => ending.taskId);
  const wrap = (lines: string[]) => [OPEN, ...lines, CLOSE].join('\n');
  const nothing = live.length === 0 && untold.length === 0;
  const full = wrap(
    nothing
      ? [PREAMBLE, 'No background work is running and no ending is waiting to be told.']
      : [
          PREAMBLE,
          `Live (${live.length}):`,
          ...(live.length === 0 ? ['- none'] : live.map((task) => liveLine(task, input.now, maxLabelChars))),
          ...(untold.length === 0
            ? []
            : [
                `Ended, not yet told (${untold.length}):`,
                ...untold.map((ending) => endedLine(byId.get(ending.taskId), ending, maxLabelChars)),
              ]),
          ADVICE,
        ],
  );
  if (utf8ByteLength(full) <= maxBytes) return { text: full, live: liveIds, untold: untoldIds, form: 'full' };
  // Compact: ids only, grouped by kind, every live task still named once.
  const groups = new Map<string, string[]>();
  for (const task of live) groups.set(task.kind, [...(groups.get(task.kind) ?? []), task.id]);
  const compactLines = (ids: Map<string, string[]>, left: number) => [
    `Live (${live.length}), ids only (the full list did not fit ${maxBytes} bytes):`,
    ...[...ids].map(([kind, list]) => `${kind}: ${list.join(', ')}`),
    ...(left > 0 ? [`+${left} older live tasks not shown: task_list shows them all`] : []),
    ...(untold.length === 0 ? [] : [`Ended, not yet told (${untold.length}): ${untoldIds.join(', ')}`]),
    ADVICE,
  ];
  const compact = wrap(compactLines(groups, 0));
  if (utf8ByteLength(compact) <= maxBytes) {
    return { text: compact, live: liveIds, untold: untoldIds, form: 'compact' };
  }
  // Cut: the newest live ids that fit, the rest counted; untold ids cut to fit as well.
  let kept = live.length;
  for (;;) {
    kept = Math.max(0, Math.floor(kept * 0.8));
    const newest = live.slice(live.length - kept);
    const cutGroups = new Map<string, string[]>();
    for (const task of newest) cutGroups.set(task.kind, [...(cutGroups.get(task.kind) ?? []), task.id]);
    const text = wrap(compactLines(cutGroups, live.length - kept));
    if (utf8ByteLength(text) <= maxBytes || kept === 0) {
      const bounded =
        utf8ByteLength(text) <= maxBytes
          ? text
          : `${truncateUtf8Tail(text, maxBytes - CLOSE.length - 1)}\n${CLOSE}`;
      return {
        text: bounded,
        live: newest.map((task) => task.id as string),
        untold: untoldIds,
        form: 'cut',
      };
    }
  }
}

/** The digest of what `caller` may see on `tasks`, with the endings its session has queued. */
export function taskDigest(
  tasks: Pick<TaskService, 'list'>,
  caller: Caller,
  options: { untold?: readonly UntoldEnding[]; maxBytes?: number; now: number },
): TaskDigest {
  return formatTaskDigest({
    tasks: tasks.list(caller),
    ...(options.untold === undefined ? {} : { untold: options.untold }),
    maxBytes: options.maxBytes ?? DEFAULT_TASK_DIGEST_BYTES,
    now: options.now,
  });
}

/** `task_digest()`: the digest, for a model that lost track (after its conversation was compacted). */
export function createTaskDigestTool(
  runtime: TaskToolsRuntime,
): ToolDefinition<Record<string, never>, TaskDigest> {
  return defineTool<Record<string, never>, TaskDigest>({
    name: TASK_DIGEST_TOOL_NAME,
    description:
      'List your live background tasks (schedules included) and the endings you have not been told yet, from the runtime. Call it when you are unsure what is running — after the conversation was summarised or compacted — instead of starting work again.',
    inputSchema: z.strictObject({}) as unknown as z.ZodType<Record<string, never>>,
    async execute(_input, context): Promise<ToolResult<TaskDigest>> {
      const caller = context.caller;
      const digest = taskDigest(runtime.tasks, caller, {
        untold: runtime.options.untold?.(caller) ?? [],
        maxBytes: runtime.options.digestMaxBytes,
        now: runtime.options.clock.now(),
      });
      return { text: digest.text, isError: false, value: digest };
    },
  });
}
