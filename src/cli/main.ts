#!/usr/bin/env node
/** The `errand` command. */
import { runDemo } from './demo.js';

const usage = `Usage: errand <command>

Commands:
  demo     run a short scenario of the task service, printed to the terminal
  help     show this help
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command] = argv;
  switch (command) {
    case 'demo':
      return runDemo(process.stdout);
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
