/**
 * The model-facing `agent_message` tool: sends more instructions to a subagent. A running subagent
 * reads the message at its next turn boundary; a finished, continuable one is resumed with it under the
 * same task id (its conversation goes on where it ended, and a new notification comes when it ends).
 */
import { z } from 'zod';
import { InvalidArgumentError } from '../../tasks/index.js';
import { optionKeys, rejectUnknownOptions } from '../../tasks/option-keys.js';
import {
  type BackgroundToolValue,
  defineTool,
  describeToolError,
  type ToolDefinition,
  type ToolResult,
  toolError,
  toolResult,
} from '../../tools/index.js';
import { SubagentNeedsSessionError } from './errors.js';
import type { SubagentProducer } from './subagent-producer.js';

export const AGENT_MESSAGE_TOOL_NAME = 'agent_message';

/** Options of `createAgentMessageTool`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface AgentMessageToolOptions {
  readonly producer: SubagentProducer;
  /** The tool's name. Default `agent_message`. */
  readonly name?: string;
}

const AGENT_MESSAGE_TOOL_OPTION_KEYS = optionKeys<AgentMessageToolOptions>()({ producer: true, name: true });

export interface AgentMessageInput {
  readonly task_id: string;
  readonly message: string;
}

export interface AgentMessageValue {
  readonly taskId: string;
  /** `forwarded` to a running subagent, or `resumed` a finished one. */
  readonly delivery: 'forwarded' | 'resumed';
}

const inputSchema = z.strictObject({
  task_id: z.string().min(1).describe('The id of the subagent task, for example "agent-2".'),
  message: z.string().min(1).max(100_000).describe('What to tell the subagent.'),
});

const DESCRIPTION = [
  'Send a message to a subagent you started.',
  'A running subagent reads it after the step it is working on; a subagent that has finished is resumed with it under the same task id, keeps its conversation, and you are notified again when it ends.',
].join(' ');

export function createAgentMessageTool(
  options: AgentMessageToolOptions,
): ToolDefinition<AgentMessageInput, AgentMessageValue & Partial<BackgroundToolValue>> {
  rejectUnknownOptions(options, AGENT_MESSAGE_TOOL_OPTION_KEYS, { where: 'createAgentMessageTool' });
  const producer = options.producer;
  if (typeof producer?.message !== 'function') {
    throw new InvalidArgumentError('producer', 'a SubagentProducer', producer);
  }
  return defineTool({
    name: options.name ?? AGENT_MESSAGE_TOOL_NAME,
    description: DESCRIPTION,
    inputSchema,
    async execute(input, context): Promise<ToolResult<AgentMessageValue & Partial<BackgroundToolValue>>> {
      if (context.caller === undefined) return toolError(describeToolError(new SubagentNeedsSessionError()));
      try {
        const outcome = await producer.message(input.task_id, input.message, {
          caller: context.caller,
          toolUseId: context.toolCallId,
          ...(context.cwd === undefined ? {} : { cwd: context.cwd }),
          ...(context.env === undefined ? {} : { env: context.env }),
        });
        if (outcome.kind === 'forwarded') {
          return toolResult(
            `Sent the message to subagent ${outcome.snapshot.id}; it reads it after its current step.`,
            { taskId: outcome.snapshot.id, delivery: 'forwarded' as const },
          );
        }
        const taskId = outcome.started.taskId;
        return toolResult(
          `Subagent ${taskId} had finished; it was resumed with your message and runs in the background. You will be notified when it ends.`,
          { taskId, delivery: 'resumed' as const, kind: 'background' as const },
        );
      } catch (error) {
        return toolError(describeToolError(error));
      }
    },
  });
}
