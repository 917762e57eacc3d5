/**
 * Registers Errand tool definitions on an MCP server (`McpServer` of @modelcontextprotocol/sdk). Each
 * call runs through `executeTool` — validation, policy, output limit — and answers as text content with
 * `isError`. The MCP SDK validates arguments against the same zod schema first; its rejections come back
 * as error results in the SDK's words.
 */
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Owner } from '../tasks/index.js';
import type { AnyToolDefinition, ExecuteToolOptions } from '../tools/index.js';
import { executeTool } from '../tools/index.js';

/** What the MCP SDK passes a tool callback about the request (the fields Errand reads). */
export interface McpRequestFacts {
  readonly signal: AbortSignal;
  readonly requestId: string | number;
  readonly sessionId?: string | undefined;
}

export interface RegisterMcpToolsOptions extends ExecuteToolOptions {
  /** The session a request acts for (by its MCP session id, for example). Default: none (ownerless tasks). */
  readonly caller?: (request: McpRequestFacts) => Owner | undefined;
}

export interface McpToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  isError: boolean;
}

type ToolCallback = (args: unknown, extra: McpRequestFacts) => Promise<McpToolResult>;
type RegisterTool = (
  name: string,
  config: { description: string; inputSchema: unknown },
  callback: ToolCallback,
) => RegisteredTool;

export function registerMcpTools(
  server: McpServer,
  definitions: readonly AnyToolDefinition[],
  options: RegisterMcpToolsOptions = {},
): RegisteredTool[] {
  // The SDK's overloads are generic over zod shapes; a definition's schema is already a zod object.
  const register = server.registerTool.bind(server) as unknown as RegisterTool;
  return definitions.map((definition) =>
    register(
      definition.name,
      { description: definition.description, inputSchema: definition.inputSchema },
      async (args, extra) => {
        const result = await executeTool(
          definition,
          args,
          { caller: options.caller?.(extra), toolCallId: String(extra.requestId), signal: extra.signal },
          options,
        );
        return { content: [{ type: 'text', text: result.text }], isError: result.isError };
      },
    ),
  );
}
