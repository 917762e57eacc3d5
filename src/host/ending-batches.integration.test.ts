/**
 * How an idle session batches real commands' endings: a lone ending reaches the model in a turn of its
 * own, and a hundred commands that end at once (each reads one byte of a FIFO the test holds, and the
 * bytes are written together) still make exactly one model turn, with every ending delivered once — the
 * window stays open while other commands are still ending. The window's cap is raised to 1 s (as in
 * `bench:notify`): on a loaded 2-core machine a hundred endings take longer than the default 100 ms.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteSessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const BURST = 100;
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function runtimeWithTurns(): Promise<{
  runtime: ErrandRuntime;
  turns: () => number;
  directory: string;
}> {
  const directory = mkdtempSync(join(tmpdir(), 'errand-batches-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  let turns = 0;
  const model = scriptedModel([], { name: 'batches' });
  for (let index = 0; index < BURST + 10; index += 1) {
    model.push(() => {
      turns += 1;
      return { text: 'noted' };
    });
  }
  const runtime = await createErrandRuntime({
    model,
    store: openSqliteSessionStore({ home: join(directory, 'home') }),
    pty: false,
    tasks: { maxLiveTasksPerOwner: BURST + 1, maxLiveTasks: BURST + 1 },
    limits: {
      maxQueuedCommands: BURST + 10,
      maxToolResultBytes: 1024 * 1024,
      idleDrainMaxDelayMs: 1000,
    },
    notifications: { outputTail: false, wakeBudget: Number.POSITIVE_INFINITY },
  });
  cleanups.push(() => runtime.dispose());
  return { runtime, turns: () => turns, directory };
}

describe('endings of real commands, default batching window', () => {
  it(`tells a lone ending in a turn of its own, and ${BURST} endings at once in one turn`, async () => {
    const { runtime, turns, directory } = await runtimeWithTurns();
    const session = runtime.createSession({ id: 'batches' });
    await runtime.bash.start({ command: 'echo lone', owner: session.owner, background: true });
    await expect.poll(turns, { timeout: 20_000 }).toBe(1);
    await session.whenIdle();

    const gate = join(directory, 'gate');
    execFileSync('mkfifo', [gate]);
    const holder = openSync(gate, 'r+');
    cleanups.push(() => closeSync(holder));
    for (let index = 0; index < BURST; index += 1) {
      await runtime.bash.start({
        command: `read -r -N 1 _ < ${gate} # ${index}`,
        owner: session.owner,
        background: true,
      });
    }
    const running = () =>
      runtime.tasks.list(session.owner).filter((task) => task.status === 'running').length;
    expect(running()).toBe(BURST);
    writeSync(holder, Buffer.alloc(BURST, 'x'));
    await expect.poll(running, { timeout: 30_000 }).toBe(0);
    await expect
      .poll(() => runtime.store.listLedger('batches').filter((entry) => entry.state === 'delivered').length, {
        timeout: 30_000,
      })
      .toBe(BURST + 1);
    await session.whenIdle();
    expect(turns()).toBe(2);
  }, 60_000);
});
