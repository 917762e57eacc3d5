/**
 * Reads and waits: consuming deltas, idempotent final results, bounded waits that report the live task on
 * timeout, and the abort races — an aborted waiter never suppresses a notification it did not receive.
 */
import assert from 'node:assert/strict';
import type { TaskOutcome } from '../../tasks/index.js';
import { type CaseContext, failsWith } from './case-context.js';
import type { ConformanceGroup } from './conformance-case.js';

/** A notifier as a delivery policy is one: it tells an end only when it wins the claim. */
function notifier({ tasks, trusted }: CaseContext): string[] {
  const told: string[] = [];
  tasks.onTaskDone((snapshot) => {
    if (tasks.claim(snapshot.id, trusted)) told.push(snapshot.id);
  });
  return told;
}

const INVALID_TIMEOUTS: readonly unknown[] = [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '100'];

export const readingCases: ConformanceGroup = {
  name: 'reads',
  cases: [
    {
      name: 'a streaming read returns the output since the last read; reading the end claims it',
      async run({ tasks, start, settled }) {
        const { task, snapshot } = await start();
        task.push('one\n');
        assert.equal((await tasks.read(snapshot.id)).text, 'one\n');
        assert.equal((await tasks.read(snapshot.id)).text, '');
        task.push('two\n');
        task.settle();
        await settled(snapshot.id);
        const last = await tasks.read(snapshot.id);
        assert.equal(last.text, 'two\n');
        assert.equal(last.snapshot.status, 'completed');
        assert.equal(last.snapshot.reported, true);
        assert.equal(tasks.claim(snapshot.id), false);
      },
    },
    {
      name: 'a read that began while the task was live claims nothing',
      async run({ tasks, start, settled }) {
        const { task, snapshot } = await start();
        task.push('early');
        await tasks.read(snapshot.id);
        task.settle();
        assert.equal((await settled(snapshot.id)).reported, false);
        assert.equal(tasks.claim(snapshot.id), true);
      },
    },
    {
      name: 'serializes concurrent reads, so deltas never interleave',
      async run({ tasks, onCleanup, eventually, idle }) {
        const order: string[] = [];
        let release: (() => void) | undefined;
        let finish: ((outcome: TaskOutcome) => void) | undefined;
        let calls = 0;
        const { id } = await tasks.start({
          kind: 'bash',
          label: 'slow reader',
          run: () => ({
            cancel: () => finish?.({ status: 'killed' }),
            done: new Promise<TaskOutcome>((resolve) => {
              finish = resolve;
            }),
            readOutput: async () => {
              calls += 1;
              const call = calls;
              order.push(`begin ${call}`);
              if (call === 1) await new Promise<void>((resolve) => (release = resolve));
              order.push(`end ${call}`);
              return `chunk ${call}`;
            },
          }),
        });
        onCleanup(() => finish?.({ status: 'killed' }));
        const first = tasks.read(id);
        const second = tasks.read(id);
        await eventually(() => release !== undefined, 'the first read to reach the producer');
        await idle();
        assert.deepEqual(order, ['begin 1'], 'the second read waits for the first');
        release?.();
        assert.equal((await first).text, 'chunk 1');
        assert.equal((await second).text, 'chunk 2');
        assert.deepEqual(order, ['begin 1', 'end 1', 'begin 2', 'end 2']);
      },
    },
    {
      name: "returns a final-output task's result once settled, idempotently, claiming it",
      async run({ tasks, start, settled }) {
        const { task, snapshot } = await start({ streaming: false });
        const early = await tasks.read(snapshot.id);
        assert.equal(early.text, '');
        assert.equal(early.snapshot.status, 'running');
        assert.equal(early.snapshot.finalOutput, true);
        task.settle({ status: 'completed', output: 'the answer' });
        await settled(snapshot.id);
        assert.equal((await tasks.read(snapshot.id)).text, 'the answer');
        assert.equal((await tasks.read(snapshot.id)).text, 'the answer');
        assert.equal(tasks.get(snapshot.id).reported, true);
      },
    },
    {
      name: 'wraps a readOutput that throws as PRODUCER_CONTRACT (fault: producer)',
      async run({ tasks, onCleanup }) {
        let finish: ((outcome: TaskOutcome) => void) | undefined;
        const { id } = await tasks.start({
          kind: 'bash',
          label: 'x',
          run: () => ({
            cancel: () => finish?.({ status: 'killed' }),
            done: new Promise<TaskOutcome>((resolve) => {
              finish = resolve;
            }),
            readOutput: () => {
              throw new Error('disk gone');
            },
          }),
        });
        onCleanup(() => finish?.({ status: 'killed' }));
        const error = await failsWith(() => tasks.read(id), 'PRODUCER_CONTRACT');
        assert.equal((error as { fault?: unknown }).fault, 'producer');
        assert.equal(tasks.get(id).status, 'running');
      },
    },
    {
      name: 'gives frozen, non-consuming snapshots',
      async run({ tasks, start }) {
        const { task, snapshot } = await start({ spec: { detail: { pid: 1 } } });
        task.push('kept');
        const seen = tasks.get(snapshot.id);
        assert.ok(Object.isFrozen(seen) && Object.isFrozen(seen.detail));
        assert.throws(() => {
          (seen as { status: string }).status = 'completed';
        });
        tasks.list();
        tasks.get(snapshot.id);
        assert.equal((await tasks.read(snapshot.id)).text, 'kept');
      },
    },
  ],
};

export const waitingCases: ConformanceGroup = {
  name: 'waits and abort races',
  cases: [
    {
      name: 'rejects a timeout that is not a positive finite number of ms up to 2^31-1 with INVALID_TIMEOUT',
      async run({ tasks, start }) {
        const { snapshot } = await start();
        for (const timeout of INVALID_TIMEOUTS) {
          const error = await failsWith(
            () => tasks.wait(snapshot.id, timeout as number),
            'INVALID_TIMEOUT',
            'timeoutMs',
          );
          assert.equal((error as { context?: { field?: unknown } }).context?.field, 'timeoutMs');
        }
      },
    },
    {
      name: 'resolves with the terminal snapshot and claims delivery, so no notification follows',
      async run(context) {
        const told = notifier(context);
        const { task, snapshot } = await context.start();
        const waiting = context.tasks.wait(snapshot.id, 60_000);
        task.settle();
        const ended = await waiting;
        assert.equal(ended.status, 'completed');
        assert.equal(ended.reported, true);
        await context.idle();
        assert.deepEqual(told, []);
      },
    },
    {
      name: 'returns the live snapshot on timeout, without claiming or stopping the task',
      async run(context) {
        const told = notifier(context);
        const { task, snapshot } = await context.start();
        const live = await context.tasks.wait(snapshot.id, 1);
        assert.equal(live.status, 'running');
        assert.equal(live.reported, false);
        assert.deepEqual(task.cancelReasons, []);
        task.settle();
        await context.eventually(() => told.length === 1, 'the end to be told once');
        assert.deepEqual(told, [snapshot.id]);
      },
    },
    {
      name: 'returns a finished task at once with its terminal snapshot, claiming it',
      async run({ tasks, start, settled }) {
        const { task, snapshot } = await start();
        task.settle({ status: 'failed' });
        await settled(snapshot.id);
        const ended = await tasks.wait(snapshot.id, 1);
        assert.equal(ended.status, 'failed');
        assert.equal(ended.reported, true);
      },
    },
    {
      name: 'aborting a wait cancels only that wait',
      async run({ tasks, start }) {
        const { task, snapshot } = await start();
        const controller = new AbortController();
        const aborted = tasks.wait(snapshot.id, 60_000, undefined, controller.signal);
        const other = tasks.wait(snapshot.id, 60_000);
        controller.abort(new Error('turn interrupted'));
        await failsWith(() => aborted, 'WAIT_ABORTED');
        assert.equal(tasks.get(snapshot.id).status, 'running');
        assert.deepEqual(task.cancelReasons, []);
        task.settle();
        assert.equal((await other).status, 'completed');
      },
    },
    {
      name: 'rejects at once with WAIT_ABORTED for a signal that is already aborted',
      async run({ tasks, start }) {
        const { snapshot } = await start();
        await failsWith(() => tasks.wait(snapshot.id, 1_000, undefined, AbortSignal.abort()), 'WAIT_ABORTED');
      },
    },
    {
      name: 'an abort in the same tick as the settlement unregisters the waiter: the notification still goes out',
      async run(context) {
        const told = notifier(context);
        const { task, snapshot } = await context.start();
        const controller = new AbortController();
        const waiting = context.tasks.wait(snapshot.id, 60_000, undefined, controller.signal);
        task.settle();
        controller.abort();
        await failsWith(() => waiting, 'WAIT_ABORTED');
        await context.eventually(() => told.length === 1, 'the end to be told');
        assert.deepEqual(told, [snapshot.id]);
      },
    },
    {
      name: 'once settlement assigned the end to a waiter, a later abort leaves it the terminal snapshot',
      async run(context) {
        const { tasks, trusted } = context;
        const told: string[] = [];
        let controller: AbortController | undefined;
        tasks.onTaskDone((snapshot) => {
          // Aborts within the step that settled the task: the waiter already holds the end.
          controller?.abort();
          if (tasks.claim(snapshot.id, trusted)) told.push(snapshot.id);
        });
        const { task, snapshot } = await context.start();
        controller = new AbortController();
        const waiting = tasks.wait(snapshot.id, 60_000, undefined, controller.signal);
        task.settle();
        const ended = await waiting;
        assert.equal(ended.status, 'completed');
        assert.equal(ended.reported, true);
        await context.idle();
        assert.deepEqual(told, []);
      },
    },
  ],
};
