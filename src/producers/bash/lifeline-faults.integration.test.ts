/**
 * The bash executor with the lifeline sidecar as `createErrandRuntime` assembles it on Linux, against the
 * sidecar's faults: commands are spawned by this process, so a stopped (SIGSTOP) or killed (SIGKILL)
 * sidecar never holds a start, a foreground result or an ending, and a command that ends after the
 * sidecar died is settled with its real exit status. A stopped sidecar is replaced within its answer bound.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  capturingLogger,
  fixtureCommand,
  isAlive,
  pidsAfter,
  waitForOutput,
} from '../../../test/fixtures/bash/index.js';
import { Lifeline } from '../../process/index.js';
import { systemClock } from '../../tasks/clock.js';
import { BashExecutor } from './executor.js';
import type { BashExecutorOptions } from './executor-options.js';

let executors: BashExecutor[] = [];
let lifelines: Lifeline[] = [];
/** Sidecars a test stopped: continued after it whatever happened, before anything waits on them. */
const stopped = new Set<number>();

async function executor(
  options: BashExecutorOptions = {},
  answerTimeoutMs = 5000,
): Promise<{ run: BashExecutor; lifeline: Lifeline; logger: ReturnType<typeof capturingLogger> }> {
  const logger = capturingLogger();
  const lifeline = new Lifeline({ clock: systemClock, logger, answerTimeoutMs });
  lifelines.push(lifeline);
  expect(await lifeline.ready).toBe(true);
  const run = new BashExecutor({ logger, killGraceMs: 500, lifeline, ...options });
  executors.push(run);
  return { run, lifeline, logger };
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

afterEach(async () => {
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // Gone already.
    }
  }
  stopped.clear();
  await Promise.all(executors.map((created) => created.dispose()));
  await Promise.all(lifelines.map((lifeline) => lifeline.release()));
  executors = [];
  lifelines = [];
});

describe('the executor and its lifeline sidecar', () => {
  it('spawns every command from this process, not from the sidecar', async () => {
    const { run, lifeline } = await executor();
    const handle = run.start({ command: 'echo ready; exec sleep 1000' });
    // The pid is known at once: nothing waits for another process to answer.
    expect(handle.pid).toBeGreaterThan(1);
    await waitForOutput(handle, 'ready');
    expect(parentOf(handle.pid!)).toBe(process.pid);
    expect(parentOf(handle.pid!)).not.toBe(lifeline.pid);
    handle.cancel();
    expect(await handle.stopped).toMatchObject({ reason: 'cancelled', survivors: [] });
  });

  it('a stopped sidecar holds no start and no ending, and is replaced within its answer bound', async () => {
    const { run, lifeline, logger } = await executor({}, 1000);
    const first = run.start({ command: 'echo ready; exec sleep 1000' });
    await waitForOutput(first, 'ready');
    const frozen = lifeline.pid!;
    stopped.add(frozen);
    process.kill(frozen, 'SIGSTOP');
    await until(() => stateOf(frozen) === 'T');
    // While it is stopped: quick commands start and end with their real status, one after another.
    for (const code of [0, 3, 0]) {
      const facts = await run.start({ command: `echo hi; exit ${code}` }).stopped;
      expect(facts).toMatchObject({ reason: 'completed', exitCode: code });
    }
    // Taken for dead once it did not answer for the bound: killed, and another one watches the trees.
    await until(() => lifeline.pid !== undefined && lifeline.pid !== frozen);
    await until(() => !isAlive(frozen) || stateOf(frozen) === 'Z');
    expect(logger.warnings.map((warning) => warning.message)).toContain(
      'the lifeline sidecar did not answer; killing it and starting another',
    );
    first.cancel();
    expect(await first.stopped).toMatchObject({ reason: 'cancelled', survivors: [] });
  });

  it('a command that ends after the sidecar was killed is told its real exit status', async () => {
    const { run, lifeline } = await executor();
    const handles = [0, 0, 7].map((code) =>
      run.start({ command: `echo ready; read -t 2 line < /dev/zero; sleep 0.3; exit ${code}` }),
    );
    for (const handle of handles) await waitForOutput(handle, 'ready');
    process.kill(lifeline.pid!, 'SIGKILL');
    const facts = await Promise.all(handles.map((handle) => handle.stopped));
    expect(facts.map(({ reason, exitCode, signal }) => ({ reason, exitCode, signal }))).toEqual([
      { reason: 'completed', exitCode: 0, signal: null },
      { reason: 'completed', exitCode: 0, signal: null },
      { reason: 'completed', exitCode: 7, signal: null },
    ]);
  });

  it('kills a whole tree whose grandchildren hold the pipe, with the sidecar stopped', async () => {
    const { run, lifeline } = await executor({ killGraceMs: 10_000 });
    const handle = run.start({ command: fixtureCommand('hold-pipe') });
    const children = pidsAfter(await waitForOutput(handle, 'ready'), 'children');
    stopped.add(lifeline.pid!);
    process.kill(lifeline.pid!, 'SIGSTOP');
    handle.cancel('test');
    expect(await handle.stopped).toMatchObject({ reason: 'cancelled', escalated: false, survivors: [] });
    expect(children.filter(isAlive)).toEqual([]);
  });
});
