/**
 * The baseline of `bench:mcp-initialize`: the smallest MCP server the official SDK makes on stdio, with
 * one tool (a shell command), answering `initialize` as soon as its modules are loaded.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'minimal-bash', version: '1.0.0' });
server.registerTool(
  'bash',
  { description: 'Runs a shell command', inputSchema: { command: z.string() } },
  async ({ command }) => ({ content: [{ type: 'text', text: command }] }),
);
await server.connect(new StdioServerTransport());
