/**
 * `errand hook <client> <event>`: run by Claude Code, Codex or Gemini CLI as one of their hooks. It
 * hands the model the queued task notifications of the Errand session its client runs (through that
 * `errand mcp`'s socket) in the client's JSON on stdout. It never breaks its client: whatever goes wrong
 * — no Errand server for this client, a dead one, malformed input — it prints nothing and exits 0;
 * diagnostics go to stderr. Only a mistake on its own command line exits 1 (a non-blocking error for
 * every client; 2 would block the client's action). The one exit 2 is a wake (`--wake`, Claude Code's
 * `asyncRewake` hook): its text on stderr is what wakes the idle model. Around a compaction (`PreCompact`,
 * `PreCompress`; `SessionStart` with `source` `compact`) it hands the model the session's task digest.
 */
import type { Readable, Writable } from 'node:stream';
import { blockCapOf } from '../hooks/client-mode.js';
import {
  canWake,
  compactionHappens,
  HOOK_CLIENTS,
  hookEventsOf,
  isHookClient,
  momentOf,
  parseHookInput,
  runHook,
} from '../hooks/index.js';
import { resolveErrandHome } from '../store/data-directory.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';

export const HOOK_FLAGS: FlagSpecs = {
  home: {
    type: 'path',
    placeholder: '<dir>',
    description: "the data directory of the client's `errand mcp` (default: $ERRAND_HOME, else ~/.errand)",
  },
  'stop-wait-ms': {
    type: 'integer',
    placeholder: '<ms>',
    description:
      'Codex and Gemini CLI interactive: at the end of a turn, how long to wait for the first ending (default 120000)',
  },
  'headless-wait-ms': {
    type: 'integer',
    placeholder: '<ms>',
    description:
      'a headless run (claude -p, codex exec, gemini -p): how long its end holds it for running work (default 1800000)',
  },
  mode: {
    type: 'string',
    placeholder: '<headless|interactive>',
    description:
      "how the client runs (default: read from the client's command line: claude -p, codex exec, gemini -p)",
  },
  wake: {
    type: 'boolean',
    description:
      "Claude Code's background end-of-turn hook (asyncRewake): wait for the next ending, then wake the model (exit 2)",
  },
  'wake-wait-ms': {
    type: 'integer',
    placeholder: '<ms>',
    description: 'with --wake: how long to wait for the next ending (default 86400000)',
  },
  'max-blocks': {
    type: 'integer',
    placeholder: '<n>',
    description:
      "the client's cap on end-of-turn blocks in a row (Claude Code: $CLAUDE_CODE_STOP_HOOK_BLOCK_CAP, else 8; others 8; 0: none)",
  },
  'max-bytes': {
    type: 'integer',
    placeholder: '<n>',
    description: 'the most bytes of notification text printed at once (default 10000)',
  },
};

export const HOOK_USAGE = `Usage: errand hook <client> <event> [options]

Hands the queued background-task notifications of the client's Errand session to its model. Run by the
client as a hook (errand install <client> writes them); reads the hook's JSON on stdin.

Clients and events:
${HOOK_CLIENTS.map((client) => `  ${client.padEnd(12)} ${hookEventsOf(client).join(', ')}`).join('\n')}

Options:
${describeFlags(HOOK_FLAGS)}
`;

/** The most bytes of the hook's stdin kept for parsing; the rest is read and dropped. */
const MAX_INPUT_BYTES = 1024 * 1024;
/** How long the hook waits for its stdin to end before it goes on with what it has. */
const INPUT_TIMEOUT_MS = 5_000;

export interface HookCommandIo {
  readonly stdin: Readable & { isTTY?: boolean };
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Writes the output so that it was handed over once this returns. */
  readonly writeOut: (text: string) => void;
  /** The same for stderr (a wake's text). Default: `stderr.write`. */
  readonly writeErr?: (text: string) => void;
}

export async function runHookCommand(argv: readonly string[], io: HookCommandIo): Promise<number> {
  const [client, event, ...rest] = argv;
  let values: Record<string, unknown>;
  try {
    if (client === '--help' || client === '-h' || client === undefined) {
      io.stdout.write(HOOK_USAGE);
      return client === undefined ? 1 : 0;
    }
    if (!isHookClient(client)) {
      throw new UsageError(
        `Expected \`<client>\` to be one of ${HOOK_CLIENTS.join(', ')}, got ${JSON.stringify(client)}`,
      );
    }
    const moment = event === undefined ? undefined : momentOf(client, event);
    if (moment === undefined) {
      throw new UsageError(
        `Expected \`<event>\` to be one of ${hookEventsOf(client).join(', ')} for ${client}, got ${JSON.stringify(event ?? '')}`,
      );
    }
    values = parseFlags(rest, HOOK_FLAGS, io.cwd).values;
    if (values.mode !== undefined && values.mode !== 'headless' && values.mode !== 'interactive') {
      throw new UsageError(
        `Expected \`--mode\` to be headless or interactive, got ${JSON.stringify(values.mode)}`,
      );
    }
    if (values.wake === true && (!canWake(client) || moment !== 'stop')) {
      throw new UsageError(
        `Expected \`--wake\` only with claude-code ${hookEventsOf('claude-code')[2]}, got ${client} ${event}`,
      );
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`errand hook: ${error.message}\n\n${HOOK_USAGE}`);
      return 1;
    }
    throw error;
  }
  const moment = values.wake === true ? 'wake' : momentOf(client, event as string)!;
  const warn = (message: string) => io.stderr.write(`errand hook: ${message}\n`);
  const integer = (name: string): number | undefined =>
    typeof values[name] === 'number' ? (values[name] as number) : undefined;
  try {
    const input = parseHookInput(await readInput(io.stdin));
    // A session start hands over the task digest only when it is a compacted conversation's.
    if (moment === 'context' && input.source !== 'compact') return 0;
    // Gemini CLI's automatic PreCompress runs before every turn, compressing or not.
    if (moment === 'compact' && !compactionHappens(client, input.trigger)) return 0;
    const home =
      typeof values.home === 'string'
        ? values.home
        : resolveErrandHome({ env: io.env as Record<string, string> });
    const maxBytes = integer('max-bytes');
    const stopWaitMs = integer('stop-wait-ms');
    const headlessWaitMs = integer('headless-wait-ms');
    const wakeWaitMs = integer('wake-wait-ms');
    const result = await runHook({
      client,
      moment,
      home,
      stopHookActive: input.stopHookActive,
      blockCap: blockCapOf(client, io.env, integer('max-blocks')),
      ...(maxBytes === undefined ? {} : { maxBytes: Math.max(1, maxBytes) }),
      ...(stopWaitMs === undefined ? {} : { stopWaitMs }),
      ...(headlessWaitMs === undefined ? {} : { headlessWaitMs }),
      ...(wakeWaitMs === undefined ? {} : { wakeWaitMs }),
      ...(values.mode === undefined ? {} : { headless: values.mode === 'headless' }),
      write: io.writeOut,
      writeWake: io.writeErr ?? ((text) => io.stderr.write(text)),
      warn,
    });
    return result.exitCode;
  } catch (error) {
    warn(`delivering notifications failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  return 0;
}

/** The hook's stdin, at most `MAX_INPUT_BYTES` of it; '' for a terminal or a stdin that never ends. */
function readInput(stdin: Readable & { isTTY?: boolean }): Promise<string> {
  if (stdin.isTTY) return Promise.resolve('');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    const done = () => {
      clearTimeout(timer);
      stdin.off('data', onData);
      stdin.off('end', done);
      stdin.off('error', done);
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onData = (chunk: Buffer) => {
      if (kept >= MAX_INPUT_BYTES) return;
      chunks.push(chunk.subarray(0, MAX_INPUT_BYTES - kept));
      kept += chunk.length;
    };
    const timer = setTimeout(done, INPUT_TIMEOUT_MS);
    timer.unref();
    stdin.on('data', onData);
    stdin.once('end', done);
    stdin.once('error', done);
  });
}
