/**
 * How a hook's client runs, read from what the client itself exposes: whether it is headless (it ends
 * the session when the turn ends: `claude -p`, `codex exec`, `gemini -p`), read from its command line;
 * and how many end-of-turn blocks in a row it allows (Claude Code: `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`,
 * default 8, 0 or less for none; the other clients: Errand's own bound, `--max-blocks`).
 */
import type { HookClient } from './hook-clients.js';

/** Claude Code's default cap on Stop-hook blocks in a row (2.1.197). */
export const CLAUDE_CODE_DEFAULT_BLOCK_CAP = 8;
/** Errand's own bound on blocks in a row for clients without a cap of their own. */
export const DEFAULT_BLOCK_CAP = 8;

/** True when the client's command line runs it headless. */
export function isHeadlessCommandLine(client: HookClient, commandLine: readonly string[]): boolean {
  const args = commandLine.slice(1);
  switch (client) {
    case 'claude-code':
      return args.some((arg) => arg === '-p' || arg === '--print' || arg.startsWith('--print='));
    case 'codex': {
      // The native binary's first word after its options is the subcommand.
      const command = args.find((arg) => !arg.startsWith('-'));
      return command === 'exec' || command === 'e';
    }
    case 'gemini':
      return args.some((arg) => arg === '-p' || arg === '--prompt' || arg.startsWith('--prompt='));
  }
}

/** The blocks in a row the client allows (0: no cap). `flag` is `--max-blocks` when given. */
export function blockCapOf(
  client: HookClient,
  env: Readonly<Record<string, string | undefined>>,
  flag: number | undefined,
): number {
  if (flag !== undefined) return Math.max(0, flag);
  if (client !== 'claude-code') return DEFAULT_BLOCK_CAP;
  // Read as Claude Code reads it: an integer prefix, else the default.
  const parsed = Number.parseInt(env.CLAUDE_CODE_STOP_HOOK_BLOCK_CAP ?? '', 10);
  return Number.isNaN(parsed) ? CLAUDE_CODE_DEFAULT_BLOCK_CAP : Math.max(0, parsed);
}
