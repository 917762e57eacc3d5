/**
 * The model-facing `agent_message` tool: sends more instructions to a subagent. A running subagent
 * reads the message at its next turn boundary; a finished, continuable one is resumed with it under the
 * same task id (its conversation goes on where it ended, and a new notification comes when it ends).
 */
import { z } from 'zod';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';
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

/** The options of `createAgentMessageTool`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const agentMessageToolOptions = defineOptions('createAgentMessageTool', {
  producer: option.required(option.shaped<SubagentProducer>('a SubagentProducer', ['message'])),
  /** The tool's name. Default `agent_message`. */
  name: option.string({ default: AGENT_MESSAGE_TOOL_NAME }),
});

/** Options of `createAgentMessageTool`. */
export type AgentMessageToolOptions = OptionsInput<typeof agentMessageToolOptions.rules>;

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
  const { producer, name } = agentMessageToolOptions.resolve(options);
  return defineTool({
    name,
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
