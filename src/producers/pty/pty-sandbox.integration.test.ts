/**
 * pty programs under bubblewrap: the same profiles as bash (bwrap leads the terminal's session, the
 * program is its child), writes refused with the kernel's error, job control and Ctrl-C in an
 * interactive shell, escapees stopped with the tree, and the profile shown to the model.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { expectScreen, fixture, type PtyTestbed, ptyTestbed } from '../../../test/fixtures/pty/harness.js';
import { findMarkedProcesses, LEAK_MARK_VARIABLE } from '../../../test/setup/process-census.js';
import { findBubblewrap, waitForOuterPid } from '../../../test/support/bubblewrap.js';
import { parseForegroundGroup, parseProcessStat } from '../../process/index.js';
import { createOwner } from '../../tasks/index.js';
import { executeTool } from '../../tools/index.js';
import { createPtyTools } from './pty-tools.js';

const bwrap = findBubblewrap();
let testbed: PtyTestbed | undefined;
const directories: string[] = [];

afterEach(async () => {
  await testbed?.close();
  testbed = undefined;
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function directory(prefix: string, parent = tmpdir()): string {
  const path = realpathSync(mkdtempSync(join(parent, prefix)));
  directories.push(path);
  return path;
}

function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    return false;
  }
}

/** Whether a marked `sleep 1000` is the foreground process group of its terminal. */
function foregroundSleep(): boolean {
  return findMarkedProcesses(process.env[LEAK_MARK_VARIABLE]!).some(({ pid, commandLine }) => {
    if (commandLine !== 'sleep 1000') return false;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const group = parseProcessStat(stat)?.pgid;
      return group !== undefined && group === parseForegroundGroup(stat);
    } catch {
      return false;
    }
  });
}

describe.skipIf(bwrap === undefined)('pty under bubblewrap', () => {
  it('pty_start in workspace-write: the profile in the description and detail, writes outside refused', async () => {
    testbed = ptyTestbed({ sandbox: 'workspace-write' });
    const workspace = directory('errand-pty-ws-');
    const outside = directory('errand-pty-outside-', '/var/tmp');
    const [ptyStart] = createPtyTools(testbed.producer, {
      sandbox: { profile: 'workspace-write', network: false },
    });
    expect(ptyStart!.description).toContain(
      'Programs run in a sandbox (profile workspace-write, network off)',
    );
    const owner = createOwner('s1');
    const context = {
      caller: owner,
      toolCallId: 'call_1',
      signal: new AbortController().signal,
      cwd: workspace,
    };
    const started = await executeTool(
      ptyStart!,
      { command: `touch ${join(outside, 'no')}; echo inside > yes.txt && echo wrote-inside; sleep 30` },
      context,
    );
    const taskId = (started.value as { taskId: string }).taskId;
    await expectScreen(testbed.producer.process(taskId, owner), 'wrote-inside');
    expect(testbed.producer.screen(taskId, owner).text).toContain('Read-only file system');
    expect(readFileSync(join(workspace, 'yes.txt'), 'utf8')).toBe('inside\n');
    expect(existsSync(join(outside, 'no'))).toBe(false);
    expect(testbed.tasks.get(taskId, owner).detail.sandbox).toEqual({
      profile: 'workspace-write',
      network: false,
    });
    await testbed.tasks.kill(taskId, owner);
  });

  it('an interactive shell keeps job control inside: Ctrl-C stops the foreground job, not the shell', async () => {
    testbed = ptyTestbed({ sandbox: 'read-only' });
    const { taskId } = await testbed.producer.start({ cwd: directory('errand-pty-ws-') });
    const pty = testbed.producer.process(taskId, undefined);
    pty.writeInput('echo "up $((1 + 1))"', ['Enter']);
    await expectScreen(pty, 'up 2');
    pty.writeInput('echo "job $((6 * 7))"; sleep 1000; echo "never $((1 + 1))"', ['Enter']);
    await expectScreen(pty, 'job 42');
    // The interrupt waits for the job to be the terminal's foreground group: sent while the shell is still
    // handing the terminal to it, it reaches the shell, and the job runs on.
    await expect.poll(foregroundSleep, { timeout: 10_000, interval: 10 }).toBe(true);
    pty.writeInput('', ['Ctrl-C']);
    pty.writeInput('echo "still $((40 + 2))"', ['Enter']);
    await expectScreen(pty, 'still 42');
    expect(pty.screen().text).not.toContain('never 2');
    expect(pty.running).toBe(true);
  });

  it('stops a tree whose members left the session inside the sandbox: nothing is left', async () => {
    testbed = ptyTestbed({ sandbox: 'workspace-write' });
    // The script runs from the workspace: the checkout may be under /tmp, which the sandbox replaces.
    const workspace = directory('errand-pty-ws-');
    copyFileSync(fixture('escapees.sh'), join(workspace, 'escapees.sh'));
    const { taskId } = await testbed.producer.start({ command: 'bash ./escapees.sh', cwd: workspace });
    const pty = testbed.producer.process(taskId, undefined);
    await expectScreen(pty, /escaped \d+ \d+/);
    // Pids inside the sandbox's own namespace; this process knows them by others.
    const [child, grandchild] = await Promise.all(
      /escaped (\d+) (\d+)/
        .exec(pty.screen().text)!
        .slice(1)
        .map((pid) => waitForOuterPid(Number(pid))),
    );
    expect(isAlive(child!) && isAlive(grandchild!)).toBe(true);
    await testbed.tasks.kill(taskId);
    const settled = await testbed.tasks.wait(taskId, 20_000);
    expect(settled.status).toBe('killed');
    expect(isAlive(child!)).toBe(false);
    expect(isAlive(grandchild!)).toBe(false);
    expect(findMarkedProcesses(process.env[LEAK_MARK_VARIABLE]!)).toEqual([]);
  });
});
