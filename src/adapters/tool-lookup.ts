/** Finds a definition by the name a model called, for adapters that dispatch calls themselves. */
import type { AnyToolDefinition, ToolResult } from '../tools/index.js';
import { toolError } from '../tools/index.js';

export function findTool(
  definitions: readonly AnyToolDefinition[],
  name: string,
): AnyToolDefinition | undefined {
  return definitions.find((definition) => definition.name === name);
}

/** The answer to a call of a tool that is not offered. */
export function unknownToolResult(name: string, definitions: readonly AnyToolDefinition[]): ToolResult {
  const offered = definitions.map((definition) => definition.name).join(', ');
  return toolError(
    `Error [UNKNOWN_TOOL]: There is no tool named ${JSON.stringify(name)}; the tools are: ${offered}`,
  );
}
