/** Subagents as background tasks: the producer, its child sessions, the `agent` and `agent_message` tools. */
export {
  AGENT_MESSAGE_TOOL_NAME,
  type AgentMessageInput,
  type AgentMessageToolOptions,
  type AgentMessageValue,
  createAgentMessageTool,
} from './agent-message-tool.js';
export {
  type AgentProfile,
  agentProfileOptions,
  isModelSource,
  type ModelSource,
  type ResolvedAgentProfile,
} from './agent-profile.js';
export {
  AGENT_TOOL_DEFAULTS,
  AGENT_TOOL_NAME,
  type AgentForegroundValue,
  type AgentTool,
  type AgentToolInput,
  type AgentToolOptions,
  type AgentToolValue,
  agentToolOptions,
  createAgentTool,
} from './agent-tool.js';
export type { ChildRunReason, ChildRunResult } from './child-run.js';
export {
  AgentProfileNotFoundError,
  AgentRunInBackgroundDisabledError,
  StopNotificationFailedError,
  SubagentDepthExceededError,
  SubagentNeedsSessionError,
  SubagentNotAcceptingMessagesError,
  SubagentNotContinuableError,
  SubagentProducerDisposedError,
} from './errors.js';
export { type SubagentFacts, subagentFacts } from './subagent-facts.js';
export {
  type ResolvedSubagentOptions,
  SUBAGENT_DEFAULTS,
  type SubagentChildContext,
  type SubagentProducerOptions,
  subagentProducerOptions,
} from './subagent-options.js';
export { subagentOutcome } from './subagent-outcome.js';
export {
  createSubagentProducer,
  type DetachedSubagentRequest,
  type ResumeSubagentOptions,
  type StartedSubagent,
  type SubagentMessageOutcome,
  SubagentProducer,
  type SubagentRequest,
} from './subagent-producer.js';
export { createSubagentStopStrategy, type SubagentStopStrategyOptions } from './subagent-stop-strategy.js';
export type { SubagentUsage } from './usage-meter.js';
