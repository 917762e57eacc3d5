/**
 * The model-facing `agent` tool. A foreground call waits for the subagent and returns its final text;
 * it is registered as foreground work, so it moves to the background when asked (`promote`, a person's
 * key) or after `autoBackgroundMs`, and from then on no longer follows the parent turn's abort. A
 * background call returns `{ kind: 'background', taskId }` at once; the parent is notified when it ends.
 */
import { z } from 'zod';
import {
  createTrustedCaller,
  isTerminalStatus,
  MAX_TIMER_DELAY_MS,
  type TaskId,
  type TaskSnapshot,
} from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';
import {
  type BackgroundToolValue,
  defineTool,
  describeToolError,
  type ForegroundCall,
  ForegroundCalls,
  formatStatusLine,
  hasInputKey,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
  toolError,
  toolResult,
} from '../../tools/index.js';
import { AGENT_MESSAGE_TOOL_NAME } from './agent-message-tool.js';
import { AgentRunInBackgroundDisabledError, SubagentNeedsSessionError } from './errors.js';
import type { StartedSubagent, SubagentProducer } from './subagent-producer.js';

export const AGENT_TOOL_NAME = 'agent';
/** The options of `createAgentTool`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const agentToolOptions = defineOptions('createAgentTool', {
  producer: option.required(option.shaped<SubagentProducer>('a SubagentProducer', ['start'])),
  /**
   * Whether the model may run subagents in the background. False removes `run_in_background` from the
   * schema and rejects a forced one. Default true.
   */
  enableRunInBackground: option.boolean({ default: true }),
  /**
   * A foreground subagent still running after this long moves to the background and the call returns
   * its task id. `false` (the default) never moves it on its own: foreground means the model asked to
   * wait for the answer.
   */
  autoBackgroundMs: option.orFalse(option.integer({ min: 1 }), { default: false }),
  /** Default: the producer's clock. */
  clock: option.clock(),
  /**
   * The name of the tool that sends a subagent more instructions, mentioned in this tool's texts;
   * `false` when the harness does not offer one. Default `agent_message`.
   */
  messageToolName: option.orFalse(option.string({ default: AGENT_MESSAGE_TOOL_NAME })),
  /** The tool's name. Default `agent`. */
  name: option.string({ default: AGENT_TOOL_NAME }),
});

/** Options of `createAgentTool`. */
export type AgentToolOptions = OptionsInput<typeof agentToolOptions.rules>;

/** The fixed defaults of `AgentToolOptions`. */
export const AGENT_TOOL_DEFAULTS = agentToolOptions.defaults;

export interface AgentToolInput {
  readonly prompt: string;
  readonly description: string;
  readonly run_in_background?: boolean | undefined;
  readonly profile?: string | undefined;
}

/** The canonical value of a foreground call that ran to its end. */
export interface AgentForegroundValue {
  readonly kind: 'foreground';
  readonly taskId: string;
  readonly status: TaskSnapshot['status'];
}

export type AgentToolValue = BackgroundToolValue | AgentForegroundValue;

export interface AgentTool extends ToolDefinition<AgentToolInput, AgentToolValue> {
  /** Moves a running foreground subagent to the background (a person's key); key: tool call id or task id. */
  promote(key: string): TaskSnapshot | undefined;
  /** The foreground calls running now, oldest first. */
  foregroundCalls(): ForegroundCall[];
}

const trusted = createTrustedCaller('agent-tool');

function inputSchema(producer: SubagentProducer, enableRunInBackground: boolean): z.ZodType<AgentToolInput> {
  const names = producer.profiles.map((profile) => profile.name);
  const fields = {
    prompt: z
      .string()
      .min(1)
      .describe(
        'The task for the subagent: everything it needs to know, since it sees none of this conversation.',
      ),
    description: z
      .string()
      .min(1)
      .max(200)
      .describe('What the subagent does, in 3-5 words (shown to the user and in notifications).'),
    ...(names.length === 0
      ? {}
      : {
          profile: z
            .enum(names as [string, ...string[]])
            .optional()
            .describe(
              'The agent profile to run under (its instructions, model and tools). Default: the general subagent.',
            ),
        }),
  };
  // A forced run_in_background on a disabled instance is refused before the schema (refuseInput).
  if (!enableRunInBackground) return z.strictObject(fields) as unknown as z.ZodType<AgentToolInput>;
  return z.strictObject({
    ...fields,
    run_in_background: z
      .boolean()
      .optional()
      .describe(
        'Run it in the background and get a task id at once; you are notified with its result when it ends. Default false: wait for its answer.',
      ),
  }) as unknown as z.ZodType<AgentToolInput>;
}

function describeTool(
  producer: SubagentProducer,
  enableRunInBackground: boolean,
  autoBackgroundMs: number | false,
  messageTool: string | false,
): string {
  const lines = [
    'Start a subagent: a separate agent with its own conversation and tools that works on one task and reports back with its final answer. It does not see this conversation, so the prompt must say everything it needs.',
  ];
  if (enableRunInBackground) {
    lines.push(
      `Set run_in_background for work you do not need to wait for: you get a task id at once, keep working, and receive a <task-notification> with its result. Read it with task_output, stop it with task_kill${messageTool === false ? '' : `, send it more instructions with ${messageTool}`}.`,
    );
    if (autoBackgroundMs !== false) {
      lines.push(
        `A subagent still running after ${autoBackgroundMs} ms moves to the background by itself and you get its task id.`,
      );
    }
  }
  const profiles = producer.profiles;
  if (profiles.length > 0) {
    lines.push('Profiles:');
    for (const profile of profiles)
      lines.push(`- ${profile.name}${profile.description ? `: ${profile.description}` : ''}`);
  }
  return lines.join('\n');
}

export function createAgentTool(options: AgentToolOptions): AgentTool {
  const resolved = agentToolOptions.resolve(options);
  const { producer, enableRunInBackground, messageToolName: messageTool } = resolved;
  const autoBackgroundMs = enableRunInBackground ? resolved.autoBackgroundMs : false;
  const clock = resolved.clock ?? producer.options.clock;
  const foreground = new ForegroundCalls();

  const execute = async (
    input: AgentToolInput,
    context: ToolContext,
  ): Promise<ToolResult<AgentToolValue>> => {
    if (!enableRunInBackground && hasInputKey('run_in_background', input)) {
      return toolError(describeToolError(new AgentRunInBackgroundDisabledError(input.run_in_background)));
    }
    const owner = context.caller;
    if (owner === undefined) return toolError(describeToolError(new SubagentNeedsSessionError()));
    const background = enableRunInBackground && input.run_in_background === true;
    let started: StartedSubagent;
    try {
      started = await producer.start({
        prompt: input.prompt,
        description: input.description,
        ...(input.profile === undefined ? {} : { profile: input.profile }),
        owner,
        background,
        toolUseId: context.toolCallId,
        ...(context.cwd === undefined ? {} : { cwd: context.cwd }),
        ...(context.env === undefined ? {} : { env: context.env }),
      });
    } catch (error) {
      return toolError(describeToolError(error));
    }
    if (background) return backgroundResult(started.taskId, 'started');
    return runForeground(started, context);
  };

  const runForeground = async (
    started: StartedSubagent,
    context: ToolContext,
  ): Promise<ToolResult<AgentToolValue>> => {
    const { taskId } = started;
    const tasks = producer.tasks;
    const untrack = foreground.track({ toolCallId: context.toolCallId, taskId });
    // A foreground child follows the parent turn: interrupting the turn stops it.
    const onAbort = () => {
      tasks
        .kill(taskId, trusted, 'the parent turn was interrupted', { initiator: 'user' })
        .catch(() => undefined);
    };
    context.signal.addEventListener('abort', onAbort, { once: true });
    // An abort that came while the subagent was registering is honoured too.
    if (context.signal.aborted) onAbort();
    let autoMoved = false;
    const cancelAuto =
      autoBackgroundMs === false
        ? () => {}
        : clock.schedule(autoBackgroundMs, () => {
            autoMoved = true;
            promoteTask(taskId);
          });
    // The waiter is registered while the task runs, so its end is delivered here, not as a notification.
    const stopWaiting = new AbortController();
    const ended = waitForEnd(taskId, stopWaiting.signal);
    try {
      const moved = await Promise.race([
        tasks.waitForBackground(taskId, trusted, stopWaiting.signal).catch(() => 'settled' as const),
        ended.then(() => 'settled' as const),
      ]);
      if (moved === 'backgrounded') {
        stopWaiting.abort();
        const snapshot = await ended;
        // It ended in the same moment: this call holds its result.
        if (snapshot !== undefined && isTerminalStatus(snapshot.status)) return foregroundResult(snapshot);
        return backgroundResult(taskId, autoMoved ? 'auto' : 'promoted');
      }
      const snapshot = (await ended) ?? tasks.get(taskId, trusted);
      return foregroundResult(snapshot);
    } finally {
      stopWaiting.abort();
      cancelAuto();
      context.signal.removeEventListener('abort', onAbort);
      untrack();
    }
  };

  /** Waits (claiming delivery) until the task ends; undefined when the wait was abandoned. */
  const waitForEnd = async (taskId: TaskId, signal: AbortSignal): Promise<TaskSnapshot | undefined> => {
    for (;;) {
      try {
        const snapshot = await producer.tasks.wait(taskId, MAX_TIMER_DELAY_MS, trusted, signal);
        if (isTerminalStatus(snapshot.status)) return snapshot;
      } catch {
        return undefined;
      }
    }
  };

  const promoteTask = (taskId: TaskId): TaskSnapshot | undefined => {
    try {
      return producer.tasks.requestBackground(taskId, trusted);
    } catch {
      return undefined;
    }
  };

  const foregroundResult = (snapshot: TaskSnapshot): ToolResult<AgentToolValue> => {
    const value: AgentForegroundValue = { kind: 'foreground', taskId: snapshot.id, status: snapshot.status };
    const status = formatStatusLine(snapshot);
    if (snapshot.status === 'completed') {
      const text =
        snapshot.resultText === undefined || snapshot.resultText === '' ? '(no answer)' : snapshot.resultText;
      return toolResult(`${text}\n${status}`, value);
    }
    const why = snapshot.error === undefined ? '' : `: ${snapshot.error}`;
    return {
      text: `Subagent ${snapshot.id} ended as ${snapshot.status}${why}\n${status}`,
      isError: true,
      value,
    };
  };

  const backgroundResult = (
    taskId: TaskId,
    how: 'started' | 'auto' | 'promoted',
  ): ToolResult<AgentToolValue> => {
    const first =
      how === 'started'
        ? `Started subagent ${taskId} in the background.`
        : how === 'auto'
          ? `Subagent ${taskId} was still running after ${autoBackgroundMs} ms, so it moved to the background.`
          : `Subagent ${taskId} was moved to the background by the user.`;
    return toolResult(
      `${first} You will be notified with its result when it ends; read it with task_output (task_id "${taskId}"), stop it with task_kill${messageTool === false ? '' : `, send it instructions with ${messageTool}`}.`,
      { kind: 'background', taskId },
    );
  };

  const definition = defineTool<AgentToolInput, AgentToolValue>({
    name: resolved.name,
    description: describeTool(producer, enableRunInBackground, autoBackgroundMs, messageTool),
    inputSchema: inputSchema(producer, enableRunInBackground),
    execute,
    ...(enableRunInBackground
      ? {}
      : {
          refuseInput: (raw: unknown) =>
            hasInputKey('run_in_background', raw)
              ? new AgentRunInBackgroundDisabledError((raw as AgentToolInput).run_in_background)
              : undefined,
        }),
  });
  return Object.freeze({
    ...definition,
    promote(key: string) {
      const call = foreground.find(key);
      return call ? promoteTask(call.taskId) : undefined;
    },
    foregroundCalls: () => foreground.list(),
  });
}
