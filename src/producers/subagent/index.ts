/** Subagents as background tasks: the producer, its child sessions, the `agent` and `agent_message` tools. */
export * from './agent-message-tool.js';
export * from './agent-profile.js';
export * from './agent-tool.js';
export type { ChildRunReason, ChildRunResult } from './child-run.js';
export * from './errors.js';
export * from './subagent-options.js';
export * from './subagent-producer.js';
export * from './subagent-stop-strategy.js';
export * from './usage-meter.js';
