#!/usr/bin/env node
/** The `errand` command. */
import { runChatCommand } from './chat.js';
import { runDemo } from './demo.js';
import { runMcpCommand } from './mcp-command.js';
import { runServeCommand } from './serve-command.js';

const usage = `Usage: errand <command>

Commands:
  demo     the whole loop on a scripted model with real background commands
           (--no-dashboard, --hold to keep the dashboard up)
  chat     the agent loop with a real model (ERRAND_MODEL, ERRAND_BASE_URL, ERRAND_API_KEY)
           (--cwd <dir>, --home <dir>, --resume <session-id>, --sandbox <profile>, --no-network;
           errand chat --help)
  mcp      the MCP server on stdio: background tasks with notifications for an MCP client
           (--dashboard, --port <n>, --home <dir>, --cwd <dir>, --sandbox <profile>, --no-network;
           errand mcp --help)
  serve    the dashboard on 127.0.0.1 until SIGINT/SIGTERM (--port <n>, --home <dir>; errand serve --help)
  help     show this help
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command] = argv;
  switch (command) {
    case 'demo':
      return runDemo({
        out: process.stdout,
        hold: argv.includes('--hold'),
        dashboard: !argv.includes('--no-dashboard'),
      });
    case 'chat':
      return runChatCommand(argv.slice(1), {
        input: process.stdin,
        out: process.stdout,
        err: process.stderr,
        env: process.env,
        cwd: process.cwd(),
      });
    case 'mcp':
      return runMcpCommand(argv.slice(1));
    case 'serve':
      return runServeCommand(argv.slice(1));
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

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `errand: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
