/**
 * `errand install <client>`: writes (or, with `--print`, shows) the MCP server entry and the hooks that
 * make a client deliver Errand's task notifications to its model — for the project in the working
 * directory or for the user. Existing settings are merged, never replaced; running it again changes
 * nothing. The entries run this very copy of Errand (its Node and its `main.js`), so no `npx` lookup
 * stands between the client and the server, and the hook finds the server as the client's own child.
 */
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HOOK_CLIENTS, isHookClient } from '../hooks/index.js';
import { planInstall } from '../hooks/install-plan.js';
import { forgetInstall, recallInstall, rememberInstall } from '../hooks/install-record.js';
import { SettingsFileError } from '../hooks/settings-merge.js';
import { resolveErrandHome } from '../store/data-directory.js';
import { closestKey } from '../tasks/option-keys.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
import { type CommandIo, processIo } from './mcp-command.js';

export const INSTALL_FLAGS: FlagSpecs = {
  scope: {
    type: 'string',
    placeholder: '<project|user>',
    description: 'project: the settings of the project in the working directory (default); user: yours',
  },
  print: { type: 'boolean', description: 'print what would be written instead of writing it' },
  remove: {
    type: 'boolean',
    description: 'remove what errand install wrote (the same as errand uninstall <client>)',
  },
  home: {
    type: 'path',
    placeholder: '<dir>',
    description:
      'the data directory errand mcp and errand hook use (default: theirs, $ERRAND_HOME or ~/.errand)',
  },
  project: {
    type: 'directory',
    placeholder: '<dir>',
    description: 'the project directory (default: the working directory)',
  },
  'stop-wait-ms': {
    type: 'integer',
    placeholder: '<ms>',
    description:
      'Codex and Gemini CLI interactive: how long the end-of-turn hook waits for the first ending (default 120000)',
  },
  'headless-wait-ms': {
    type: 'integer',
    placeholder: '<ms>',
    description:
      "how long the end of a headless run holds it for running work (default 1800000); the client's hook timeout matches",
  },
};

export const INSTALL_USAGE = `Usage: errand install <${HOOK_CLIENTS.join('|')}> [options]

Writes the client's MCP server entry for errand mcp and its hooks for errand hook, merging them into the
settings it already has (nothing else is changed; running it again changes nothing). With --remove (or
errand uninstall <client>) takes out exactly what it wrote.

Options:
${describeFlags(INSTALL_FLAGS)}
`;

export async function runInstallCommand(
  argv: readonly string[],
  io: CommandIo = processIo(),
): Promise<number> {
  const [client, ...rest] = argv;
  let values: Record<string, unknown>;
  try {
    if (client === undefined || client === '--help' || client === '-h') {
      io.stdout.write(INSTALL_USAGE);
      return client === undefined ? 2 : 0;
    }
    if (!isHookClient(client)) {
      const suggestion = suggestClient(client);
      throw new UsageError(
        `Expected \`<client>\` to be one of ${HOOK_CLIENTS.join(', ')}, got ${JSON.stringify(client)}${
          suggestion === undefined ? '' : ` (did you mean ${suggestion}?)`
        }`,
      );
    }
    values = parseFlags(rest, INSTALL_FLAGS, io.cwd).values;
    if (values.scope !== undefined && values.scope !== 'project' && values.scope !== 'user') {
      throw new UsageError(`Expected \`--scope\` to be project or user, got ${JSON.stringify(values.scope)}`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`errand install: ${error.message}\n\n${INSTALL_USAGE}`);
      return error.exitCode;
    }
    throw error;
  }
  const env = process.env;
  const plan = planInstall({
    client,
    scope: (values.scope as 'project' | 'user' | undefined) ?? 'project',
    projectDirectory: typeof values.project === 'string' ? values.project : io.cwd,
    userHome: homedir(),
    ...(env.CODEX_HOME ? { codexHome: env.CODEX_HOME } : {}),
    errand: { command: process.execPath, args: [fileURLToPath(new URL('./main.js', import.meta.url))] },
    ...(typeof values.home === 'string' ? { errandHome: values.home } : {}),
    ...(typeof values['stop-wait-ms'] === 'number' ? { stopWaitMs: values['stop-wait-ms'] } : {}),
    ...(typeof values['headless-wait-ms'] === 'number' ? { headlessWaitMs: values['headless-wait-ms'] } : {}),
  });
  const errandHome = typeof values.home === 'string' ? values.home : resolveErrandHome({ env });
  if (values.remove === true) return removeInstall(plan.files, errandHome, values.print === true, io);

  // Every file is merged before any is written: a broken one stops the install with nothing changed.
  let merged: Array<{ path: string; before: string | undefined; after: string }>;
  try {
    merged = plan.files.map((file) => {
      const before = readIfPresent(file.path);
      return { path: file.path, before, after: file.merge(before) };
    });
  } catch (error) {
    if (error instanceof SettingsFileError) {
      io.stderr.write(`errand install: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  const scope = (values.scope as 'project' | 'user' | undefined) ?? 'project';
  for (const file of merged) {
    if (values.print === true) {
      io.stdout.write(`# ${file.path}${file.before === file.after ? ' (unchanged)' : ''}\n${file.after}\n`);
      continue;
    }
    if (file.before === file.after) {
      io.stdout.write(`unchanged ${file.path}\n`);
      continue;
    }
    mkdirSync(dirname(file.path), { recursive: true });
    // A new project file is shared like the rest of the project; a new user file is the user's alone.
    const fresh = scope === 'project' ? 0o644 : 0o600;
    const mode = file.before === undefined ? fresh : statSync(file.path).mode & 0o777;
    writeFileSync(file.path, file.after, { mode });
    chmodSync(file.path, mode);
    rememberInstall(errandHome, file);
    io.stdout.write(`${file.before === undefined ? 'created' : 'updated'} ${file.path}\n`);
  }
  for (const note of plan.notes) io.stdout.write(`note: ${note}\n`);
  const homeFlag = typeof values.home === 'string' ? ` --home ${values.home}` : '';
  io.stdout.write(`The dashboard of your background tasks: errand dashboard${homeFlag}\n`);
  return 0;
}

/**
 * Takes out what install wrote. A file still as install left it gets its text from before the install
 * back, byte for byte (or goes, when install created it); a file changed since loses only Errand's
 * entries.
 */
function removeInstall(
  files: ReturnType<typeof planInstall>['files'],
  errandHome: string,
  print: boolean,
  io: CommandIo,
): number {
  let planned: Array<{ path: string; before: string; after: string | undefined }>;
  try {
    planned = files.flatMap((file) => {
      const before = readIfPresent(file.path);
      if (before === undefined) return [];
      const recorded = recallInstall(errandHome, file.path);
      const after =
        recorded !== undefined && recorded.after === before ? recorded.before : file.unmerge(before);
      return [{ path: file.path, before, after }];
    });
  } catch (error) {
    if (error instanceof SettingsFileError) {
      io.stderr.write(`errand install: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  for (const file of planned) {
    if (print) {
      io.stdout.write(`# ${file.path}${file.after === undefined ? ' (removed)' : ''}\n${file.after ?? ''}\n`);
      continue;
    }
    if (file.after === file.before) {
      io.stdout.write(`unchanged ${file.path}\n`);
    } else if (file.after === undefined) {
      rmSync(file.path, { force: true });
      io.stdout.write(`removed ${file.path}\n`);
    } else {
      writeFileSync(file.path, file.after);
      io.stdout.write(`updated ${file.path}\n`);
    }
    forgetInstall(errandHome, file.path);
  }
  return 0;
}

/** The client a mistyped name most likely meant: a prefix of one (`claude`), or a near spelling. */
export function suggestClient(name: string): string | undefined {
  const lower = name.toLowerCase();
  const prefixed = HOOK_CLIENTS.filter((client) => client.startsWith(lower) || lower.startsWith(client));
  if (lower.length >= 3 && prefixed.length === 1) return prefixed[0];
  const aliases: Readonly<Record<string, string>> = {
    claude: 'claude-code',
    'gemini-cli': 'gemini',
    openai: 'codex',
  };
  return aliases[lower] ?? closestKey(lower, HOOK_CLIENTS);
}

function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
