/**
 * The desktop sink runs the host's `notify-send`. The test puts a `notify-send` script on a temporary
 * PATH that records its arguments — the host program's seam — and checks it is called with the task and
 * its status, filtered and rate-limited per sink, and that a host without one is told so in one line.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { createErrandRuntime, type ErrandRuntime } from '../host/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';

let runtime: ErrandRuntime | undefined;
const directories: string[] = [];

afterEach(async () => {
  await runtime?.dispose();
  runtime = undefined;
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A directory with a `notify-send` that appends its arguments (NUL-separated, one call a line) to a file. */
function fakeNotifySend(): { directory: string; calls: () => string[][] } {
  const directory = mkdtempSync(join(tmpdir(), 'errand-notify-send-'));
  directories.push(directory);
  const record = join(directory, 'calls');
  writeFileSync(record, '');
  const script = join(directory, 'notify-send');
  writeFileSync(
    script,
    `#!/bin/sh\nfor a in "$@"; do printf '%s\\036' "$a"; done >> '${record}'\necho >> '${record}'\n`,
  );
  chmodSync(script, 0o755);
  return {
    directory,
    calls: () =>
      readFileSync(record, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => line.split('\u001e').slice(0, -1)),
  };
}

function replies(count: number) {
  const model = scriptedModel([]);
  for (let index = 0; index < count; index += 1) model.push({ text: 'Noted.' });
  return model;
}

describe('the desktop sink', () => {
  it('calls notify-send with the task and its status, for the events its filter takes', async () => {
    const fake = fakeNotifySend();
    runtime = await createErrandRuntime({
      model: replies(10),
      store: createMemorySessionStore(),
      pty: false,
      logger: capturingLogger(),
      notifyPerson: {
        desktop: { searchPath: fake.directory, events: ['task-failed', 'monitor-match'] },
        browser: false,
      },
    });
    const session = runtime.createSession({ id: 'main' });
    expect(runtime.personNotifier!.sinks).toEqual([
      { sink: 'desktop', target: 'notify-send', available: true },
    ]);
    const ok = await runtime.bash.start({ command: 'true', owner: session.owner, background: true });
    const bad = await runtime.bash.start({
      command: 'exit 7',
      description: 'flaky build',
      owner: session.owner,
      background: true,
    });
    await vi.waitFor(() => expect(fake.calls()).toHaveLength(1), { timeout: 10_000 });
    await runtime.tasks.wait(ok.taskId, 10_000, session.owner);
    await runtime.personNotifier!.whenIdle();
    expect(fake.calls()).toEqual([
      [
        '--app-name=Errand',
        '--urgency=critical',
        '--',
        `Errand: ${bad.taskId} failed`,
        `${bad.taskId} "flaky build" failed with exit code 7`,
      ],
    ]);
    expect(runtime.personNotifier!.sent()[0]!.sinks[0]).toMatchObject({
      sink: 'desktop',
      state: 'delivered',
    });
  });

  it('rate-limits per sink, and records what it held back', async () => {
    const fake = fakeNotifySend();
    runtime = await createErrandRuntime({
      model: replies(10),
      store: createMemorySessionStore(),
      pty: false,
      logger: capturingLogger(),
      notifyPerson: {
        desktop: { searchPath: fake.directory, rateLimit: { perMinute: 1, burst: 2 } },
        browser: false,
      },
    });
    const session = runtime.createSession({ id: 'main' });
    for (let index = 0; index < 4; index += 1) {
      const { taskId } = await runtime.bash.start({
        command: 'true',
        owner: session.owner,
        background: true,
      });
      await runtime.tasks.wait(taskId, 10_000, session.owner);
    }
    await vi.waitFor(() => expect(runtime!.personNotifier!.sent()).toHaveLength(4));
    await runtime.personNotifier!.whenIdle();
    const states = runtime.personNotifier!.sent().map((record) => record.sinks[0]!.state);
    expect(states.filter((state) => state === 'delivered')).toHaveLength(2);
    expect(states.filter((state) => state === 'rate-limited')).toHaveLength(2);
    expect(fake.calls()).toHaveLength(2);
  });

  it('says in one line that there is no notify-send, and stays off', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'errand-no-notify-send-'));
    directories.push(empty);
    const logger = capturingLogger();
    runtime = await createErrandRuntime({
      model: replies(5),
      store: createMemorySessionStore(),
      pty: false,
      logger,
      notifyPerson: { desktop: { searchPath: empty }, browser: false },
    });
    expect(runtime.personNotifier!.sinks[0]).toMatchObject({ sink: 'desktop', available: false });
    const lines = logger.warnings.filter((warning) => warning.message.includes('notify-send'));
    expect(lines.map((warning) => warning.message)).toEqual([
      'desktop notifications are off: notify-send was not found on PATH (Debian and Ubuntu: apt-get install libnotify-bin)',
    ]);
  });
});
