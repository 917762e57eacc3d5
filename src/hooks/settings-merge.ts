/**
 * Merging Errand's entries into a client's settings files without clobbering anything else: a JSON file
 * keeps every key it had, Errand's MCP server entry is set under its own name, and Errand's hooks replace
 * only the hook entries Errand wrote before (recognised by their `errand hook <client> <event>` command).
 * A TOML file (Codex's `config.toml`) is edited as text — only the `[mcp_servers.<name>]` tables are
 * rewritten — so the user's comments and layout survive; the result is parsed again before it is used.
 * Merging twice gives the same text: installing is idempotent.
 */
import { parse as parseToml } from 'smol-toml';

/** A settings file that is not what it should be: the install writes nothing. */
export class SettingsFileError extends Error {
  readonly code = 'SETTINGS_FILE_INVALID';
  readonly file: string;
  constructor(file: string, problem: string) {
    super(`${file}: ${problem}; fix or move it, then install again (nothing was written)`);
    this.name = 'SettingsFileError';
    this.file = file;
  }
}

type JsonObject = Record<string, unknown>;

/** One hook Errand installs: the client's event, an optional matcher, and the command. */
export interface HookEntry {
  readonly event: string;
  readonly matcher?: string;
  readonly command: string;
  /** In the client's unit (seconds for Claude Code and Codex, milliseconds for Gemini CLI). */
  readonly timeout: number;
  /** Gemini CLI names hooks in its /hooks panel. */
  readonly name?: string;
  /** Claude Code: run in the background and wake the model when it exits 2. */
  readonly asyncRewake?: boolean;
}

export interface JsonMergePlan {
  /** Where the MCP server entries live (`mcpServers`), or undefined when this file holds none. */
  readonly servers?: { readonly key: string; readonly name: string; readonly entry: JsonObject };
  /** Hooks under `hooks.<event>`. */
  readonly hooks?: readonly HookEntry[];
  /** Recognises a hook command Errand wrote before (any path to errand, any event, any options). */
  readonly isOurHook?: (command: string) => boolean;
}

/** Parses a JSON settings file's text ('' or absent: an empty object). */
export function parseJsonSettings(file: string, text: string | undefined): JsonObject {
  if (text === undefined || text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SettingsFileError(
      file,
      `not valid JSON (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SettingsFileError(file, 'its top level is not a JSON object');
  }
  return value as JsonObject;
}

/** The settings with Errand's entries merged in (a new object; the input is left as it was). */
export function mergeJsonSettings(file: string, settings: JsonObject, plan: JsonMergePlan): JsonObject {
  const merged: JsonObject = structuredClone(settings);
  if (plan.servers) {
    const servers = objectAt(file, merged, plan.servers.key);
    servers[plan.servers.name] = plan.servers.entry;
  }
  if (plan.hooks && plan.hooks.length > 0) {
    const hooks = objectAt(file, merged, 'hooks');
    const events = [...new Set(plan.hooks.map((hook) => hook.event))];
    for (const event of events) {
      const existing = hooks[event];
      if (existing !== undefined && !Array.isArray(existing)) {
        throw new SettingsFileError(file, `\`hooks.${event}\` is not an array`);
      }
      const groups = ((existing as unknown[] | undefined) ?? []).flatMap((group) =>
        withoutOurHooks(group, plan.isOurHook),
      );
      for (const hook of plan.hooks.filter((entry) => entry.event === event)) {
        groups.push({
          ...(hook.matcher === undefined ? {} : { matcher: hook.matcher }),
          hooks: [
            {
              ...(hook.name === undefined ? {} : { name: hook.name }),
              type: 'command',
              command: hook.command,
              timeout: hook.timeout,
              ...(hook.asyncRewake === true ? { asyncRewake: true } : {}),
            },
          ],
        });
      }
      hooks[event] = groups;
    }
  }
  return merged;
}

/**
 * `settings` without what `mergeJsonSettings` with `plan` wrote: Errand's server entry and its hooks;
 * a hooks list, the hooks object or the servers object left empty by that is dropped too.
 */
export function unmergeJsonSettings(file: string, settings: JsonObject, plan: JsonMergePlan): JsonObject {
  const result: JsonObject = structuredClone(settings);
  if (plan.servers) {
    const servers = result[plan.servers.key];
    if (typeof servers === 'object' && servers !== null && !Array.isArray(servers)) {
      delete (servers as JsonObject)[plan.servers.name];
      if (Object.keys(servers).length === 0) delete result[plan.servers.key];
    }
  }
  const hooks = result.hooks;
  if (plan.hooks && typeof hooks === 'object' && hooks !== null && !Array.isArray(hooks)) {
    for (const event of new Set(plan.hooks.map((hook) => hook.event))) {
      const existing = (hooks as JsonObject)[event];
      if (!Array.isArray(existing)) continue;
      const groups = existing.flatMap((group) => withoutOurHooks(group, plan.isOurHook));
      if (groups.length === 0) delete (hooks as JsonObject)[event];
      else (hooks as JsonObject)[event] = groups;
    }
    if (Object.keys(hooks).length === 0) delete result.hooks;
  }
  void file;
  return result;
}

/** The text a JSON settings object is written as. */
export function formatJsonSettings(settings: JsonObject): string {
  return `${JSON.stringify(settings, null, 2)}\n`;
}

function objectAt(file: string, parent: JsonObject, key: string): JsonObject {
  const value = parent[key];
  if (value === undefined) {
    const created: JsonObject = {};
    parent[key] = created;
    return created;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SettingsFileError(file, `\`${key}\` is not an object`);
  }
  return value as JsonObject;
}

/** A matcher group without the hooks Errand wrote before; dropped when nothing else is left in it. */
function withoutOurHooks(group: unknown, isOurHook: JsonMergePlan['isOurHook']): unknown[] {
  if (isOurHook === undefined || typeof group !== 'object' || group === null) return [group];
  const handlers = (group as JsonObject).hooks;
  if (!Array.isArray(handlers)) return [group];
  const kept = handlers.filter((handler) => {
    const command = (handler as JsonObject | null)?.command;
    return !(typeof command === 'string' && isOurHook(command));
  });
  if (kept.length === handlers.length) return [group];
  return kept.length === 0 ? [] : [{ ...(group as JsonObject), hooks: kept }];
}

// ---------------------------------------------------------------- TOML (Codex's config.toml)

/** A TOML basic string. */
export function tomlString(value: string): string {
  return JSON.stringify(value);
}

/**
 * `text` with the `[mcp_servers.<name>]` table (and its sub-tables) replaced by `table` — the complete
 * TOML text of the new table — or `table` appended when there is none. Everything else stays as it was.
 */
export function mergeTomlServer(file: string, text: string | undefined, name: string, table: string): string {
  const original = text ?? '';
  parseTomlFile(file, original);
  const lines = original === '' ? [] : original.split('\n');
  const kept: string[] = [];
  let inOurs = false;
  for (const line of lines) {
    const header = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/.exec(line);
    if (header) inOurs = isServerTable(header[1] as string, name);
    if (!inOurs) kept.push(line);
  }
  while (kept.length > 0 && kept.at(-1)?.trim() === '') kept.pop();
  const merged = `${kept.length > 0 ? `${kept.join('\n')}\n\n` : ''}${table.trimEnd()}\n`;
  try {
    parseToml(merged);
  } catch {
    // The server was defined some other way (an inline table, dotted keys): do not write a second one.
    throw new SettingsFileError(
      file,
      `\`mcp_servers.${name}\` is defined in a form Errand does not rewrite (an inline table or dotted keys)`,
    );
  }
  return merged;
}

/** `text` without the `[mcp_servers.<name>]` table (and its sub-tables); everything else as it was. */
export function unmergeTomlServer(file: string, text: string, name: string): string {
  parseTomlFile(file, text);
  const kept: string[] = [];
  let inOurs = false;
  for (const line of text.split('\n')) {
    const header = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/.exec(line);
    if (header) inOurs = isServerTable(header[1] as string, name);
    if (!inOurs) kept.push(line);
  }
  while (kept.length > 0 && kept.at(-1)?.trim() === '') kept.pop();
  return kept.length === 0 ? '' : `${kept.join('\n')}\n`;
}

function isServerTable(key: string, name: string): boolean {
  const parts = key.split('.').map((part) => part.trim().replace(/^"(.*)"$/, '$1'));
  return parts[0] === 'mcp_servers' && parts[1] === name;
}

function parseTomlFile(file: string, text: string): JsonObject {
  try {
    return parseToml(text) as JsonObject;
  } catch (error) {
    throw new SettingsFileError(
      file,
      `not valid TOML (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`,
    );
  }
}
