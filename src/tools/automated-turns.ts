/**
 * Automated turns — turns nobody typed, started by a schedule's firing — run with a restricted tool set.
 * A person is not watching such a turn, so by default it may only look: read output, list tasks, read the
 * digest. It may not stop other work (`task_kill`), start schedules (a schedule that schedules is a loop
 * nobody approved), or run commands, unless the schedule's definition names those tools. A forbidden call
 * answers the model with a clear error (`TOOL_NOT_ALLOWED_IN_AUTOMATED_TURN`) and runs nothing.
 *
 * The gate is keyed by session: while a session runs an automated turn, its gated tools consult the turn's
 * policy. Turns of one session run one at a time, and a firing starts only while its session is idle.
 */
import { ErrandError } from '../tasks/index.js';
import {
  type AnyToolDefinition,
  describeToolError,
  type ToolContext,
  type ToolDefinition,
  toolError,
} from './tool-definition.js';

/** The tools an automated turn may call when its schedule names none: reading only. */
export const READ_ONLY_TOOLS: readonly string[] = Object.freeze(['task_output', 'task_list', 'task_digest']);
/** Tools no automated turn may call, whatever its schedule says. */
export const NEVER_IN_AUTOMATED_TURNS: readonly string[] = Object.freeze(['schedule']);

export class ToolNotAllowedError extends ErrandError {
  constructor(tool: string, schedule: string, allowed: readonly string[]) {
    super(
      'TOOL_NOT_ALLOWED_IN_AUTOMATED_TURN',
      'caller',
      `${tool} is not allowed in this automated turn (started by ${schedule}); it may call only ${allowed.length === 0 ? 'no tools' : allowed.join(', ')}. Report what you found instead; a person can act on it.`,
      { context: { tool, schedule } },
    );
  }
}

export interface AutomatedTurnPolicy {
  /** The schedule whose firing runs the turn (named in errors). */
  readonly schedule: string;
  /** The tools the turn may call (`NEVER_IN_AUTOMATED_TURNS` are removed from it). */
  readonly allowed: readonly string[];
}

export class AutomatedTurns {
  readonly #active = new Map<string, AutomatedTurnPolicy>();

  /** Marks `sessionId` as running an automated turn under `policy`; returns the end of it. */
  begin(sessionId: string, policy: AutomatedTurnPolicy): () => void {
    const allowed = policy.allowed.filter((tool) => !NEVER_IN_AUTOMATED_TURNS.includes(tool));
    const entry = { schedule: policy.schedule, allowed };
    this.#active.set(sessionId, entry);
    return () => {
      if (this.#active.get(sessionId) === entry) this.#active.delete(sessionId);
    };
  }

  /** The policy of the automated turn `sessionId` runs now, if any. */
  policyOf(sessionId: string): AutomatedTurnPolicy | undefined {
    return this.#active.get(sessionId);
  }

  /** Wraps a tool so that its calls from an automated turn are checked against the turn's policy. */
  gate<Input, Value>(tool: ToolDefinition<Input, Value>): ToolDefinition<Input, Value> {
    const turns = this;
    return Object.freeze({
      ...tool,
      async execute(input: Input, context: ToolContext) {
        const sessionId =
          context.caller !== undefined && 'sessionId' in context.caller
            ? context.caller.sessionId
            : undefined;
        const policy = sessionId === undefined ? undefined : turns.policyOf(sessionId);
        if (policy !== undefined && !policy.allowed.includes(tool.name)) {
          return toolError(
            describeToolError(new ToolNotAllowedError(tool.name, policy.schedule, policy.allowed)),
          );
        }
        return tool.execute(input, context);
      },
    });
  }

  /** Gates every tool of a list. */
  gateAll(tools: readonly AnyToolDefinition[]): AnyToolDefinition[] {
    return tools.map((tool) => this.gate(tool));
  }
}
