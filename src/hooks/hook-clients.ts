/**
 * The hook contracts of the clients Errand plugs into: which of each client's hook events deliver task
 * notifications, and the JSON each expects on stdout. Three moments matter, whatever a client calls
 * them: after any tool's result (`tool`), when the user submits a prompt (`prompt`), and when the model
 * ends its turn (`stop`). At the first two the notifications are added as context; at the end of a turn
 * the end is refused, with the notifications as the reason, so the model continues with them.
 *
 * Sources (the shapes checked here are those of the versions Errand is tested with):
 * - Claude Code: hooks reference, `PostToolUse` / `UserPromptSubmit` `hookSpecificOutput.additionalContext`,
 *   `Stop` `{ "decision": "block", "reason" }`, input field `stop_hook_active`.
 * - Codex CLI (0.171): `codex-rs/hooks/schema/generated/*.command.{input,output}.schema.json` — the same
 *   three events and output shapes as Claude Code; `PostToolUse` also runs for MCP tools.
 * - Gemini CLI (0.61): `docs/hooks/reference.md` — `AfterTool` and `BeforeAgent`
 *   `hookSpecificOutput.additionalContext`, `AfterAgent` `{ "decision": "deny", "reason" }` (the reason
 *   becomes the next prompt), input field `stop_hook_active`.
 */

/**
 * The moment a hook runs at, in Errand's words. `wake` is Claude Code's background end-of-turn hook
 * (`asyncRewake`): it waits after the turn ended and wakes the idle model with the next ending.
 * `compact` runs before the client compacts (summarises) the conversation: the model is about to lose
 * what it knew of its tasks, so the next hook that reaches it hands it the task digest. `context` runs
 * once the compacted conversation starts again (a `SessionStart` whose `source` is `compact`) and hands
 * the digest over itself.
 */
export type HookMoment = 'tool' | 'prompt' | 'stop' | 'wake' | 'compact' | 'context';

export const HOOK_CLIENTS = ['claude-code', 'codex', 'gemini'] as const;

export type HookClient = (typeof HOOK_CLIENTS)[number];

type ForegroundMoment = Exclude<HookMoment, 'wake'>;

/** The moments every client has; `compact` and `context` only where the client offers an event. */
type CoreMoment = 'tool' | 'prompt' | 'stop';

interface ClientContract {
  /** The client's event name for each moment it has. */
  readonly events: Readonly<Record<CoreMoment, string>> & {
    readonly compact?: string;
    readonly context?: string;
  };
  /** The word the client's end-of-turn event takes to refuse the end (and continue with the reason). */
  readonly refuseStop: 'block' | 'deny';
}

const CONTRACTS: Readonly<Record<HookClient, ClientContract>> = {
  'claude-code': {
    events: {
      tool: 'PostToolUse',
      prompt: 'UserPromptSubmit',
      stop: 'Stop',
      compact: 'PreCompact',
      context: 'SessionStart',
    },
    refuseStop: 'block',
  },
  codex: {
    events: {
      tool: 'PostToolUse',
      prompt: 'UserPromptSubmit',
      stop: 'Stop',
      compact: 'PreCompact',
      context: 'SessionStart',
    },
    refuseStop: 'block',
  },
  // Gemini CLI's PreCompress is advisory (its output reaches only the person) and its SessionStart has
  // no `compact` source: the digest follows at the next tool result or prompt.
  gemini: {
    events: { tool: 'AfterTool', prompt: 'BeforeAgent', stop: 'AfterAgent', compact: 'PreCompress' },
    refuseStop: 'deny',
  },
};

export function isHookClient(value: unknown): value is HookClient {
  return typeof value === 'string' && (HOOK_CLIENTS as readonly string[]).includes(value);
}

const MOMENT_ORDER: readonly ForegroundMoment[] = ['tool', 'prompt', 'stop', 'compact', 'context'];

/** The client's event names, in moment order (tool, prompt, stop, then compact and context if it has them). */
export function hookEventsOf(client: HookClient): readonly string[] {
  return momentsOf(client).map((moment) => hookEventFor(client, moment));
}

/** The foreground moments the client has an event for, in order. */
export function momentsOf(client: HookClient): readonly ForegroundMoment[] {
  const { events } = CONTRACTS[client];
  return MOMENT_ORDER.filter((moment) => events[moment] !== undefined);
}

/** The event name the client uses for `moment` (a wake runs on the end-of-turn event). */
export function hookEventFor(client: HookClient, moment: HookMoment): string {
  const event = CONTRACTS[client].events[moment === 'wake' ? 'stop' : moment];
  if (event === undefined) throw new Error(`${client} has no hook event for the ${moment} moment`);
  return event;
}

/** Whether the client sends an end-of-turn block's reason to the model as the next prompt (Gemini CLI). */
export function promptContinuesBlock(client: HookClient): boolean {
  return client === 'gemini';
}

/** Whether the client can wake an idle model from a background hook (Claude Code's `asyncRewake`). */
export function canWake(client: HookClient): boolean {
  return client === 'claude-code';
}

/**
 * Whether a `compact` hook with this `trigger` (`manual` or `auto`) compacts the conversation. Gemini CLI
 * 0.61.0 fires `PreCompress` with `auto` at the start of every turn, before it checks whether the history
 * is long enough to compress (measured: it fired with nothing compressed), so only its `manual` one
 * (`/compress`) says the model is about to forget. Claude Code and Codex fire theirs only when they compact.
 */
export function compactionHappens(client: HookClient, trigger: string | undefined): boolean {
  return client !== 'gemini' || trigger === 'manual';
}

/** The moment a client's event stands for, or undefined when Errand does not hook it. */
export function momentOf(client: HookClient, event: string): ForegroundMoment | undefined {
  const { events } = CONTRACTS[client];
  return MOMENT_ORDER.find((moment) => events[moment] === event);
}

/**
 * What the hook prints for `text` (the notifications, or a reminder at the end of a turn): the client's
 * JSON, on one line. Empty text prints nothing — an empty stdout is "no opinion" to every client.
 */
export function formatHookOutput(client: HookClient, moment: HookMoment, text: string): string {
  if (text === '') return '';
  const contract = CONTRACTS[client];
  // A wake writes the text itself to stderr and exits 2: the client shows it to the model as is.
  if (moment === 'wake') return text;
  // Before compaction nothing can reach the model (the server only marks the digest due).
  if (moment === 'compact') return '';
  if (moment === 'stop') return JSON.stringify({ decision: contract.refuseStop, reason: text });
  return JSON.stringify({
    hookSpecificOutput: { hookEventName: hookEventFor(client, moment), additionalContext: text },
  });
}

/** The facts Errand reads from a hook's stdin. Every field is optional: a malformed input reads as empty. */
export interface HookInput {
  /** True when the client is already continuing because an end-of-turn hook refused the end. */
  readonly stopHookActive: boolean;
  /** The client's event name, as it reported it. */
  readonly eventName: string | undefined;
  /** A `SessionStart`'s reason (`startup`, `resume`, `clear`, `compact`). */
  readonly source: string | undefined;
  /** A compaction hook's `trigger` (`manual`, `auto`). */
  readonly trigger: string | undefined;
}

export function parseHookInput(text: string): HookInput {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { stopHookActive: false, eventName: undefined, source: undefined, trigger: undefined };
  }
  const record = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  return {
    stopHookActive: record.stop_hook_active === true,
    eventName: typeof record.hook_event_name === 'string' ? record.hook_event_name : undefined,
    source: typeof record.source === 'string' ? record.source : undefined,
    trigger: typeof record.trigger === 'string' ? record.trigger : undefined,
  };
}
