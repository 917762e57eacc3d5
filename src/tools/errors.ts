/** Errors of the tool layer. */
import { ErrandError } from '../tasks/index.js';

export class ToolsDisposedError extends ErrandError {
  constructor(toolName: string) {
    super('TOOLS_DISPOSED', 'caller', `The ${toolName} tool is disposed; its task controller is detached`, {
      context: { toolName },
    });
  }
}

export class ToolCallAbortedError extends ErrandError {
  constructor(toolName: string, reason: unknown) {
    super('TOOL_CALL_ABORTED', 'caller', `The ${toolName} call was aborted before it started`, {
      cause: reason,
      context: { toolName },
    });
  }
}
