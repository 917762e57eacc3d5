/**
 * `errand dashboard`: prints the URL of the data directory's dashboard, starting `errand serve` in the
 * background first when none runs. For a person using Errand through an MCP client: the URL (token
 * included) is printed here, to them, and never reaches the model. The started server keeps running on
 * its own (its own session and process group) until stopped with SIGTERM or SIGINT.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runDirectoryOf } from '../hooks/index.js';
import { ensurePrivateDirectory, resolveErrandHome } from '../store/data-directory.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
import { dashboardUrl, loadDashboardSettings, runningDashboard } from './dashboard-state.js';
import { type CommandIo, processIo } from './mcp-command.js';

export const DASHBOARD_FLAGS: FlagSpecs = {
  home: {
    type: 'path',
    placeholder: '<dir>',
    description: 'the data directory (default: $ERRAND_HOME, else ~/.errand)',
  },
};

export const DASHBOARD_USAGE = `Usage: errand dashboard [options]

Prints the URL of the data directory's dashboard (the sessions and background work of every errand mcp,
errand chat, ... using it), starting errand serve in the background if none runs. The URL carries the
access token: keep it to yourself.

Options:
${describeFlags(DASHBOARD_FLAGS)}
`;

/** How long `errand dashboard` waits for the server it started to listen. */
const START_TIMEOUT_MS = 15_000;

export async function runDashboardCommand(
  argv: readonly string[],
  io: CommandIo = processIo(),
): Promise<number> {
  let values: Record<string, unknown>;
  try {
    const parsed = parseFlags(argv, DASHBOARD_FLAGS, io.cwd);
    if (parsed.help) {
      io.stdout.write(DASHBOARD_USAGE);
      return 0;
    }
    values = parsed.values;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`errand dashboard: ${error.message}\n\n${DASHBOARD_USAGE}`);
      return error.exitCode;
    }
    throw error;
  }
  const home = typeof values.home === 'string' ? values.home : resolveErrandHome();
  const settings = loadDashboardSettings(home);
  let running = runningDashboard(home);
  if (running === undefined) {
    ensurePrivateDirectory(runDirectoryOf(home));
    // Its output goes to a log in the data directory: nobody reads its stdout once this command exits.
    const log = openSync(join(runDirectoryOf(home), 'dashboard.log'), 'a', 0o600);
    try {
      const child = spawn(
        process.execPath,
        [fileURLToPath(new URL('./main.js', import.meta.url)), 'serve', '--home', home],
        { detached: true, stdio: ['ignore', log, log] },
      );
      child.unref();
    } finally {
      closeSync(log);
    }
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (running === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      running = runningDashboard(home);
    }
    if (running === undefined) {
      io.stderr.write(
        `errand dashboard: errand serve did not start within ${START_TIMEOUT_MS} ms; see ${join(runDirectoryOf(home), 'dashboard.log')}\n`,
      );
      return 1;
    }
  }
  io.stdout.write(`${dashboardUrl(running.port, settings.token)}\n`);
  return 0;
}
