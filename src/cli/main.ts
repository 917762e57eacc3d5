#!/usr/bin/env node
/**
 * The `errand` command. Each command's module is loaded only when it runs: `errand hook` runs on every
 * tool call of a client and must not pay for loading the runtime.
 */
import { writeSync } from 'node:fs';
import { ErrandError } from '../tasks/errors.js';
import { exitQuietlyOnBrokenPipe } from './broken-pipe.js';

/** Commands that run a runtime and own their streams; every other one only prints. */
const RUNNING_COMMANDS = new Set(['demo', 'chat', 'mcp', 'worker', 'serve', 'hook']);

const usage = `Usage: errand <command>

Commands:
  demo     the whole loop on a scripted model with real background commands
           (--no-dashboard, --hold to keep the dashboard up)
  chat     the agent loop with a real model (ERRAND_MODEL, ERRAND_BASE_URL, ERRAND_API_KEY)
           (--cwd <dir>, --home <dir>, --resume <session-id>, --durable, --sandbox <profile>, --no-network,
           --memory-limit <size>, --pids-limit <n>, ..., --redis <url>; errand chat --help)
  mcp      the MCP server on stdio: background tasks with notifications for an MCP client
           (--dashboard, --port <n>, --home <dir>, --cwd <dir>, --max-tasks <n>, --durable,
           --sandbox <profile>, --no-network, --memory-limit <size>, --cpu-time-limit <time>, --cpus <n>,
           --pids-limit <n>, --session-…, --redis <url>; errand mcp --help)
           --http [host:]port serves Streamable HTTP (MCP 2026-07-28 and 2025) behind a bearer token
  ask      inside a command errand mcp --http runs as an MCP task: ask its client, print the answer
  install  write a client's MCP server entry and hooks: errand install <claude-code|codex|gemini>
           (--scope project|user, --print, --remove; errand install --help)
  uninstall  remove what errand install wrote: errand uninstall <client> (same options)
  hook     run by a client as a hook: errand hook <client> <event> (errand hook --help)
  worker   run background commands dispatched through Redis: errand worker --redis <url>
           (--concurrency <n>, --name <name>, --labels a,b, --home <dir>; errand worker --help)
  serve    the dashboard on 127.0.0.1 until SIGINT/SIGTERM (--port <n>, --home <dir>; errand serve --help)
  dashboard  print the data directory's dashboard URL, starting errand serve if needed (--home <dir>)
  help     show this help
`;

/** Writes all of `text` to descriptor `fd` before returning (a hook's output must be handed over whole). */
function writeAllSync(fd: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  let written = 0;
  while (written < bytes.length) written += writeSync(fd, bytes, written);
}

async function main(argv: readonly string[]): Promise<number> {
  const [command] = argv;
  if (command === undefined || !RUNNING_COMMANDS.has(command)) {
    exitQuietlyOnBrokenPipe([process.stdout, process.stderr]);
  }
  switch (command) {
    case 'demo': {
      const { runDemo } = await import('./demo.js');
      return runDemo({
        out: process.stdout,
        hold: argv.includes('--hold'),
        dashboard: !argv.includes('--no-dashboard'),
      });
    }
    case 'chat':
      return (await import('./chat.js')).runChatCommand(argv.slice(1), {
        input: process.stdin,
        out: process.stdout,
        err: process.stderr,
        env: process.env,
        cwd: process.cwd(),
      });
    case 'mcp':
      return (await import('./mcp-command.js')).runMcpCommand(argv.slice(1));
    case 'ask':
      return (await import('./ask-command.js')).runAskCommand(argv.slice(1), {
        stdout: process.stdout,
        stderr: process.stderr,
        env: process.env,
      });
    case 'worker':
      return (await import('./worker-command.js')).runWorkerCommand(argv.slice(1));
    case 'serve':
      return (await import('./serve-command.js')).runServeCommand(argv.slice(1));
    case 'dashboard':
      return (await import('./dashboard-command.js')).runDashboardCommand(argv.slice(1));
    case 'install':
      return (await import('./install-command.js')).runInstallCommand(argv.slice(1));
    case 'uninstall':
      return (await import('./install-command.js')).runInstallCommand([...argv.slice(1), '--remove']);
    case 'hook': {
      const { runHookCommand } = await import('./hook-command.js');
      const code = await runHookCommand(argv.slice(1), {
        stdin: process.stdin,
        stdout: process.stdout,
        stderr: process.stderr,
        cwd: process.cwd(),
        env: process.env,
        // Synchronous: once it returns, the client has the output, and the reservation may be committed.
        writeOut: (text) => writeAllSync(1, text),
        writeErr: (text) => writeAllSync(2, text),
      });
      // A client that keeps stdin open must not keep the hook alive.
      return process.exit(code);
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(usage);
      return 0;
    default:
      process.stderr.write(`errand: unknown command ${JSON.stringify(command)}\n\n${usage}`);
      return 2;
  }
}

/**
 * Failures of the data directory or the store at start: a person fixes them (space, permissions, the
 * path), so they get one line naming what and why, and exit code 2 — never a stack trace.
 */
const STARTUP_FAILURES = new Set([
  'DATA_DIRECTORY_UNAVAILABLE',
  'STORE_OPEN_FAILED',
  'STORE_SCHEMA_TOO_NEW',
  'STORE_SCHEMA_MISMATCH',
  'STORE_UNAVAILABLE',
  'STORE_BUSY',
]);

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (ErrandError.isInstance(error) && STARTUP_FAILURES.has(error.code)) {
      const command = process.argv[2] ?? '';
      process.stderr.write(`errand ${command}: ${error.message.replace(/\s*\n\s*/g, ' ')}\n`);
      process.exitCode = 2;
      // Nothing was started that needs stopping: leave now, even if a stream still holds the loop.
      process.exit(2);
    }
    process.stderr.write(
      `errand: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
