/** Errors of the subagent producer, each an ErrandError with a stable code. */
import { ErrandError } from '../../tasks/index.js';

/** A call named an agent profile the producer does not know. */
export class AgentProfileNotFoundError extends ErrandError {
  constructor(profile: string, known: readonly string[]) {
    const list = known.length === 0 ? 'none are configured' : `known profiles: ${known.join(', ')}`;
    super(
      'AGENT_PROFILE_NOT_FOUND',
      'caller',
      `No agent profile named ${JSON.stringify(profile)} (${list})`,
      {
        context: { field: 'profile', value: profile, known },
      },
    );
  }
}

/** A forced `run_in_background` on an agent tool created with `enableRunInBackground: false`. */
export class AgentRunInBackgroundDisabledError extends ErrandError {
  constructor(value: unknown) {
    super(
      'RUN_IN_BACKGROUND_DISABLED',
      'caller',
      'This agent tool runs subagents in the foreground only: call it again without `run_in_background`, and the call returns when the subagent ends',
      { context: { field: 'run_in_background', value } },
    );
  }
}

/** A subagent tried to start a subagent deeper than `maxDepth` allows. */
export class SubagentDepthExceededError extends ErrandError {
  constructor(depth: number, maxDepth: number) {
    super(
      'SUBAGENT_DEPTH_EXCEEDED',
      'caller',
      `Cannot start a subagent at depth ${depth}: subagents may nest at most ${maxDepth} level(s) deep (maxDepth)`,
      { context: { field: 'maxDepth', value: depth, depth, maxDepth } },
    );
  }
}

/** The tool was called without a session: a subagent's child session needs a parent. */
export class SubagentNeedsSessionError extends ErrandError {
  constructor() {
    super(
      'SUBAGENT_NEEDS_SESSION',
      'caller',
      'A subagent runs as a child of a session: call the agent tool from a session (the call had no caller)',
    );
  }
}

/** A message reached a subagent whose run is ending; it would never be read. */
export class SubagentNotAcceptingMessagesError extends ErrandError {
  constructor(taskId: string) {
    super(
      'SUBAGENT_NOT_ACCEPTING_MESSAGES',
      'caller',
      `Subagent ${taskId} is finishing its run and reads no more messages; once it has ended, send the message again to resume it`,
      { context: { taskId } },
    );
  }
}

/** A finished subagent that cannot be resumed (not continuable, lost, or unknown to this producer). */
export class SubagentNotContinuableError extends ErrandError {
  constructor(taskId: string, why: string) {
    super('SUBAGENT_NOT_CONTINUABLE', 'caller', `Subagent ${taskId} cannot be resumed: ${why}`, {
      context: { taskId },
    });
  }
}

/**
 * A person's (or a sweep's) stop of a subagent ended it, but its stop notification could not be queued
 * for the parent session. The delivery claim was returned, so the result is still collectible.
 */
export class StopNotificationFailedError extends ErrandError {
  constructor(taskId: string, cause: unknown) {
    super(
      'STOP_NOTIFICATION_FAILED',
      'system',
      `Subagent ${taskId} was stopped, but its stop notification could not be queued for the parent session; the result stays unreported and can be read with task_output`,
      { cause, context: { taskId } },
    );
  }
}

/** The producer was disposed; it starts no more subagents. */
export class SubagentProducerDisposedError extends ErrandError {
  constructor() {
    super(
      'SUBAGENT_PRODUCER_DISPOSED',
      'caller',
      'The subagent producer is disposed; it starts no more subagents',
    );
  }
}
