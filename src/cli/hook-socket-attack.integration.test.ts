/**
 * A session's own background command attacks its hook socket (a real `errand mcp`, the test process as
 * its client): it connects, sends `take` and, given anything, `commit`. Unconfined it reaches the socket
 * and is refused by the peer check (a process the server started); confined (`--sandbox read-only
 * --no-network`) it does not even see the socket, the store or the dashboard token. Either way it steals
 * nothing: both endings queued before it still reach the model through the client's own hook.
 */

import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { findBubblewrap } from '../../test/support/bubblewrap.js';
import { CLI_PATH, type McpCli, startMcpCli, textBlocks } from '../../test/support/mcp-client.js';
import { listLiveServers } from '../hooks/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const stealFixture = join(root, 'test/fixtures/hooks/steal-notifications.mjs');
const bwrap = findBubblewrap();

const directories: string[] = [];
const clis: McpCli[] = [];
afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function startServer(home: string, args: readonly string[]): Promise<McpCli> {
  const cli = await startMcpCli({ args: ['--home', home, ...args] });
  clis.push(cli);
  for (let round = 0; round < 400 && listLiveServers(home).length === 0; round += 1) {
    await new Promise((done) => setTimeout(done, 25));
  }
  expect(listLiveServers(home)).toHaveLength(1);
  return cli;
}

/** Every tool result's text: a result may carry queued endings in band (the model reads them there). */
const seenByModel: string[] = [];

async function startBackground(cli: McpCli, command: string): Promise<string> {
  const result = await cli.call('bash', { command, run_in_background: true });
  seenByModel.push(...textBlocks(result));
  const id = /Started (bash-\d+) in the background/.exec(textBlocks(result)[0] ?? '')?.[1];
  if (!id) throw new Error(`not started: ${textBlocks(result).join('\n')}`);
  return id;
}

function queued(cli: McpCli, taskId: string) {
  return cli.waitForLog((params) => (params.data as { taskId?: string } | undefined)?.taskId === taskId);
}

/** The client's own hook (a child of the test process, the registered client): what it is given. */
function clientHook(home: string): Promise<string> {
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      [CLI_PATH, 'hook', 'claude-code', 'UserPromptSubmit', '--home', home],
      {
        stdio: ['pipe', 'pipe', 'ignore'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.on('exit', () => done(stdout));
    child.stdin.end(
      JSON.stringify({
        session_id: 's',
        transcript_path: '/tmp/t',
        cwd: '/tmp',
        hook_event_name: 'UserPromptSubmit',
        prompt: 'hi',
      }),
    );
  });
}

async function attack(
  args: readonly string[],
): Promise<{ output: string; context: string; endings: string[] }> {
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'errand-attack-')));
  directories.push(home);
  const cli = await startServer(home, args);
  const socket = listLiveServers(home)[0]!.socket;
  // The dashboard's token, as `errand dashboard` keeps it.
  const tokenFile = join(home, 'dashboard.json');
  writeFileSync(tokenFile, '{"schemaVersion":1,"token":"secret-token"}\n', { mode: 0o600 });
  chmodSync(home, 0o700);
  const endings = [
    await startBackground(cli, 'echo first; exit 3'),
    await startBackground(cli, 'echo second; exit 4'),
  ];
  for (const id of endings) await queued(cli, id);
  const attacker = await startBackground(
    cli,
    `${process.execPath} ${stealFixture} ${socket} 3 ${join(home, 'errand.sqlite')} ${tokenFile}`,
  );
  await queued(cli, attacker);
  const output = textBlocks(await cli.call('task_output', { task_id: attacker })).join('\n');
  seenByModel.push(output, await clientHook(home));
  return { output, context: seenByModel.splice(0).join('\n'), endings };
}

describe('a background command against its own hook socket', () => {
  it('unconfined: it reaches the socket, is refused as a process of the server, steals nothing', async () => {
    const { output, context, endings } = await attack([]);
    expect(output).toContain('stolen 0');
    expect(output).not.toMatch(/stole \d/);
    expect(output.match(/^closed$/gm)).toHaveLength(3);
    for (const id of endings) expect(context.split(`<task-id>${id}</task-id>`)).toHaveLength(2);
  });

  it.skipIf(bwrap === undefined)(
    'read-only, network off: no socket, no store, no token to reach; both endings reach the model',
    async () => {
      const { output, context, endings } = await attack(['--sandbox', 'read-only', '--no-network']);
      expect(output).toContain('stolen 0');
      expect(output.match(/^connect-failed ENOENT$/gm)).toHaveLength(3);
      expect(output).toMatch(/^unreadable .*errand\.sqlite$/m);
      expect(output).toMatch(/^unreadable .*dashboard\.json$/m);
      expect(output).not.toMatch(/^read /m);
      for (const id of endings) expect(context.split(`<task-id>${id}</task-id>`)).toHaveLength(2);
    },
  );
});
