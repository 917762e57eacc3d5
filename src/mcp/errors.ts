/** Errors of the MCP server, with stable codes. The SDK turns a thrown error into a JSON-RPC error. */
import { ErrandError } from '../tasks/index.js';

/** Every slot of the MCP task store holds live work: a new task-augmented call is refused. */
export class McpTaskLimitError extends ErrandError {
  constructor(limit: number) {
    super(
      'MCP_TASK_LIMIT',
      'caller',
      `Cannot create another MCP task: ${limit} tasks are still running (the limit); cancel one or wait for one to finish`,
      { context: { limit } },
    );
  }
}

/** An MCP task id this connection does not know (never created, expired, or already collected). */
export class McpTaskNotFoundError extends ErrandError {
  constructor(taskId: string) {
    super('MCP_TASK_NOT_FOUND', 'caller', `No MCP task with id ${JSON.stringify(taskId)}`, {
      context: { mcpTaskId: taskId },
    });
  }
}

/** A result was asked for before the task ended. */
export class McpTaskNotFinishedError extends ErrandError {
  constructor(taskId: string) {
    super('MCP_TASK_NOT_FINISHED', 'caller', `MCP task ${JSON.stringify(taskId)} has not finished yet`, {
      context: { mcpTaskId: taskId },
    });
  }
}

/** A `tasks/list` cursor this store did not hand out. */
export class McpInvalidCursorError extends ErrandError {
  constructor(cursor: string) {
    super('MCP_INVALID_CURSOR', 'caller', `Unknown tasks/list cursor ${JSON.stringify(cursor)}`, {
      context: { cursor },
    });
  }
}
