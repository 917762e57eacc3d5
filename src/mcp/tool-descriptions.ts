/**
 * What the client's model reads about Errand's tools over MCP: each tool's own description, plus a line
 * that steers the model to the right tool. A client offers its own shell and its own task tools (Claude
 * Code's Bash, TaskOutput, TaskStop) right beside Errand's; without these lines a model runs long work in
 * the client's shell, which nobody notifies about, or asks the client's task tools about an Errand id.
 */
import type { AnyToolDefinition } from '../tools/index.js';

const BASH_LINE =
  "Prefer this tool over your client's built-in shell for anything that may take more than a few seconds or that should keep running while you work (builds, test suites, servers, watchers): run it with run_in_background: true and you are told when it ends. Its task ids are read with task_output and stopped with task_kill.";

const TASK_TOOL_LINE =
  "Only for Errand's task ids (bash-3, pty-1, ...); your client's own task tools (for example TaskOutput, TaskStop, TaskList) do not know them.";

const TASK_TOOLS = new Set(['task_output', 'task_list', 'task_kill']);

/** The description a tool gets over MCP. */
export function mcpToolDescription(definition: AnyToolDefinition): string {
  if (definition.name === 'bash') return `${definition.description}\n\n${BASH_LINE}`;
  if (TASK_TOOLS.has(definition.name)) return `${definition.description}\n\n${TASK_TOOL_LINE}`;
  return definition.description;
}

/** The most characters of a client's tool-call id used as `<tool-use-id>`; a longer one is not used. */
export const MAX_CLIENT_TOOL_CALL_ID_LENGTH = 256;

/**
 * The id of the model's tool call that a request answers, as the client sent it in `_meta`: Claude Code's
 * `claudecode/toolUseId`, Codex's `callId`. Gemini CLI (0.61) sends no call id; the one token of its own
 * it sends per call is `_meta.progressToken`, a fresh UUID it maps to its call internally — a string
 * token is taken for want of a call id (a number is a JSON-RPC counter, as SDK clients send). Undefined
 * when the client sent neither: the server then names the call after its JSON-RPC request.
 */
export function clientToolCallId(meta: unknown): string | undefined {
  if (typeof meta !== 'object' || meta === null) return undefined;
  const record = meta as Record<string, unknown>;
  for (const key of ['claudecode/toolUseId', 'callId', 'progressToken']) {
    const value = record[key];
    if (typeof value === 'string' && value !== '' && value.length <= MAX_CLIENT_TOOL_CALL_ID_LENGTH) {
      return value;
    }
  }
  return undefined;
}
