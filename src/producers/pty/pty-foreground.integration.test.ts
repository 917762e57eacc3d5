/**
 * `pty_start` in the foreground (`run_in_background: false`), the same choice `bash` offers: the call waits
 * for the program's end and returns its final screen, with no notification to follow; a program still
 * running at `timeout_ms` moves to the background in place and is notified as usual; an aborted call
 * stops it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fixture, fixtureCommand, type PtyTestbed, ptyTestbed } from '../../../test/fixtures/pty/harness.js';
import { createOwner, type Owner } from '../../tasks/index.js';
import { executeTool, type ToolContext } from '../../tools/index.js';
import { createPtyStartTool } from './pty-tools.js';

let testbed: PtyTestbed | undefined;
const owners: Owner[] = [];

afterEach(async () => {
  for (const owner of owners.splice(0)) await owner.dispose();
  await testbed?.close();
  testbed = undefined;
});

function setup() {
  testbed = ptyTestbed();
  testbed.tasks.attachController('test');
  const owner = createOwner(`session-${owners.length + 1}`);
  owners.push(owner);
  const context = (signal = new AbortController().signal): ToolContext => ({
    caller: owner,
    toolCallId: 'call_pty',
    signal,
    cwd: fixture(''),
  });
  return { bed: testbed, ptyStart: createPtyStartTool(testbed.producer), owner, context };
}

describe('pty_start in the foreground', () => {
  it('waits for the end and returns the final screen; the end is not notified', async () => {
    const { bed, ptyStart, owner, context } = setup();
    const result = await executeTool(
      ptyStart,
      { command: 'printf "built\\r\\nok\\r\\n"; exit 3', run_in_background: false, cols: 40, rows: 10 },
      context(),
    );
    expect(result.isError).toBe(false);
    expect(result.text).toMatch(/^built\nok\n\[pty-1 exited with code 3 · 40x10 · cursor row 3, column 1\]$/);
    expect(result.value).toMatchObject({ kind: 'foreground', taskId: 'pty-1', exitCode: 3, running: false });
    const task = bed.tasks.get('pty-1', owner);
    expect(task).toMatchObject({ status: 'failed', isBackgrounded: false });
    // The answer reported the end: nobody else can claim it.
    expect(bed.tasks.claim('pty-1', owner)).toBe(false);
  });

  it('moves a program still running at timeout_ms to the background, with its screen so far', async () => {
    const { bed, ptyStart, owner, context } = setup();
    const result = await executeTool(
      ptyStart,
      { command: fixtureCommand('echo-repl.sh'), run_in_background: false, timeout_ms: 300 },
      context(),
    );
    expect(result.value).toEqual({ kind: 'background', taskId: 'pty-1' });
    expect(result.text).toMatch(
      /^The program was still running after 300 ms, so it keeps running in the background as pty-1 \(pid \d+\)\. Its screen so far:\n/,
    );
    expect(bed.tasks.get('pty-1', owner)).toMatchObject({ status: 'running', isBackgrounded: true });
    await bed.tasks.kill('pty-1', owner);
    await bed.tasks.wait('pty-1', 10_000, owner);
  });

  it('stops the program when the call is aborted', async () => {
    const { bed, ptyStart, owner, context } = setup();
    const controller = new AbortController();
    const call = executeTool(
      ptyStart,
      { command: 'sleep 60', run_in_background: false },
      context(controller.signal),
    );
    await expect.poll(() => bed.tasks.list(owner).length).toBe(1);
    controller.abort();
    const result = await call;
    expect(result.isError).toBe(true);
    const ended = await bed.tasks.wait('pty-1', 10_000, owner);
    expect(ended.status).toBe('killed');
  });

  it('refuses a timeout_ms above the bound', async () => {
    const { ptyStart, context } = setup();
    const result = await executeTool(
      ptyStart,
      { command: 'true', run_in_background: false, timeout_ms: 10_000_000 },
      context(),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/timeout_ms/);
  });
});
