/**
 * The model-facing `schedule` tool: "check the deploy in 30 minutes", "every morning at 7 run the
 * flaky-test report", "when the session has been idle for 10 minutes, summarise the day". It starts a
 * `schedule` task owned by the calling session and answers with its id; `task_list` shows it, `task_kill`
 * stops it, and each firing is an automated turn of the session with read-only tools unless `tools` says
 * otherwise.
 */
import { z } from 'zod';
import { ErrandError, InvalidArgumentError } from '../../tasks/index.js';
import {
  type BackgroundToolValue,
  defineTool,
  describeToolError,
  READ_ONLY_TOOLS,
  type ToolDefinition,
  type ToolResult,
  toolError,
  toolResult,
} from '../../tools/index.js';
import type { ScheduleProducer } from './schedule-producer.js';

export interface ScheduleToolInput {
  readonly prompt: string;
  readonly at?: string | undefined;
  readonly in_ms?: number | undefined;
  readonly every_ms?: number | undefined;
  readonly cron?: string | undefined;
  readonly time_zone?: string | undefined;
  readonly idle_ms?: number | undefined;
  readonly times?: number | undefined;
  readonly tools?: readonly string[] | undefined;
  readonly missed?: 'run_once' | 'skip' | undefined;
  readonly label?: string | undefined;
}

export const SCHEDULE_TOOL_NAME = 'schedule';

export function createScheduleTool(
  producer: ScheduleProducer,
): ToolDefinition<ScheduleToolInput, BackgroundToolValue> {
  const schema = z.strictObject({
    prompt: z.string().min(1).describe('What the automated turn should do when the schedule fires.'),
    at: z
      .string()
      .optional()
      .describe('Fire once at this ISO 8601 time, for example "2026-12-05T07:00:00+01:00".'),
    in_ms: z.number().int().nonnegative().optional().describe('Fire once this many milliseconds from now.'),
    every_ms: z.number().int().positive().optional().describe('Fire repeatedly, this often (milliseconds).'),
    cron: z.string().optional().describe('Fire on a five-field cron expression, for example "0 7 * * 1-5".'),
    time_zone: z
      .string()
      .optional()
      .describe('The IANA time zone of cron, for example "Europe/Berlin". Default UTC.'),
    idle_ms: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Fire when the session has been idle (no turn running) this long.'),
    times: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('How many firings of a repeating schedule. Default: until stopped (bounded).'),
    tools: z
      .array(z.string())
      .optional()
      .describe(
        `The tools the automated turns may call. Default read-only: ${READ_ONLY_TOOLS.join(', ')}. schedule is never allowed.`,
      ),
    missed: z
      .enum(['run_once', 'skip'])
      .optional()
      .describe(
        'Firings that came due while the runtime was down: run once when it is back (default), or skip them.',
      ),
    label: z.string().max(200).optional().describe('A short name for the schedule.'),
  });
  return defineTool<ScheduleToolInput, BackgroundToolValue>({
    name: SCHEDULE_TOOL_NAME,
    description: [
      'Schedule work for later: once (at, in_ms), repeatedly (every_ms, or cron with time_zone), or when the session has been idle for idle_ms. Give exactly one.',
      'Each firing starts an automated turn with prompt; no person is watching it, so by default it may only read (task_output, task_list, task_digest), never stop other work or schedule more.',
      'You get a task id (schedule-N): task_list shows it with its next firing, task_kill stops it.',
    ].join(' '),
    inputSchema: schema as unknown as z.ZodType<ScheduleToolInput>,
    async execute(input, context): Promise<ToolResult<BackgroundToolValue>> {
      try {
        const owner = context.caller;
        if (owner === undefined || !('sessionId' in owner)) {
          throw new ErrandError(
            'SCHEDULE_NEEDS_SESSION',
            'caller',
            'A schedule fires turns of its session; this call comes from no session',
          );
        }
        let at: number | undefined;
        if (input.at !== undefined) {
          at = Date.parse(input.at);
          if (!Number.isFinite(at)) throw new InvalidArgumentError('at', 'an ISO 8601 time', input.at);
        }
        const { at: _at, ...rest } = input;
        const snapshot = await producer.start({ ...rest, ...(at === undefined ? {} : { at }) }, { owner });
        const summary = typeof snapshot.detail.summary === 'string' ? snapshot.detail.summary : '';
        return toolResult(
          [
            `Scheduled ${snapshot.id}: ${summary}.`,
            `Each firing starts an automated turn (tools: ${(input.tools ?? READ_ONLY_TOOLS).join(', ') || 'none'}). task_list shows it; stop it with task_kill (task_id "${snapshot.id}").`,
          ].join('\n'),
          { kind: 'background', taskId: snapshot.id },
        );
      } catch (error) {
        return toolError(describeToolError(error));
      }
    },
  });
}
