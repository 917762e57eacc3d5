#!/usr/bin/env node
/** The `errand` command. */
import { runDemo } from './demo.js';

const usage = `Usage: errand <command>

Commands:
  demo     the whole loop on a scripted model with real background commands
           (--no-dashboard, --hold to keep the dashboard up)
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
