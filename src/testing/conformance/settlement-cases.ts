/**
 * Settlement, stopping and claims: the first outcome wins and is told once; a cancel that throws fails
 * the kill (the task keeps running) or, in teardown, forces `failed`; the delivery claim is one-shot and
 * is returned only by a holder of the same attempt.
 */
import assert from 'node:assert/strict';
import { createOwner, createTrustedCaller, type TaskOutcome, type TaskSnapshot } from '../../tasks/index.js';
import { failsWith } from './case-context.js';
import type { ConformanceGroup } from './conformance-case.js';

export const settlementCases: ConformanceGroup = {
  name: 'first outcome wins',
  cases: [
    {
      name: 'keeps the first outcome and tells it once',
      async run({ tasks, start, settled, idle }) {
        const ends: TaskSnapshot[] = [];
        tasks.onTaskDone((snapshot) => void ends.push(snapshot));
        const { task, snapshot } = await start();
        task.settle({ status: 'completed', detail: { exitCode: 0 } });
        task.settle({ status: 'failed' });
        const ended = await settled(snapshot.id);
        await idle();
        assert.equal(ended.status, 'completed');
        assert.deepEqual(ended.detail, { exitCode: 0 });
        assert.equal(typeof ended.endedAt, 'number');
        assert.deepEqual(
          ends.map((end) => end.status),
          ['completed'],
        );
      },
    },
    {
      name: 'a cancel that throws during owner disposal forces failed with a warning; the late outcome changes nothing',
      async run({ tasks, start, idle, warnings, trusted }) {
        const owner = createOwner('s1');
        const ends: TaskSnapshot[] = [];
        tasks.onTaskDone((snapshot) => void ends.push(snapshot));
        const { task, snapshot } = await start({ owner, onCancel: 'throw' });
        let last: TaskSnapshot | undefined;
        tasks.onTasksChanged(
          (change) => {
            if (change.task.id === snapshot.id) last = change.task;
          },
          { caller: trusted },
        );
        await owner.dispose();
        assert.equal(last?.status, 'failed');
        assert.ok((last?.error ?? '').length > 0, 'the failed record says why');
        assert.ok(warnings.length > 0, 'a warning says the work may be left behind');
        const told = ends.length;
        assert.ok(told <= 1, 'told at most once');
        task.settle({ status: 'completed' });
        await idle();
        assert.equal(last?.status, 'failed');
        assert.equal(ends.length, told, 'the late outcome is not told');
      },
    },
    {
      name: 'a done promise that rejects settles the task as failed, with a warning',
      async run({ start, settled, warnings }) {
        const { task, snapshot } = await start();
        task.reject(new Error('boom'));
        const ended = await settled(snapshot.id);
        assert.equal(ended.status, 'failed');
        assert.match(ended.error ?? '', /boom/);
        assert.ok(warnings.length > 0);
      },
    },
    {
      name: 'an outcome with a status that is not terminal settles the task as failed',
      async run({ start, settled }) {
        const { task, snapshot } = await start();
        task.settle({ status: 'running' } as unknown as TaskOutcome);
        assert.equal((await settled(snapshot.id)).status, 'failed');
      },
    },
    {
      name: 'records the output, result and error of the outcome',
      async run({ tasks, start, settled }) {
        const { task, snapshot } = await start({ streaming: false });
        task.settle({ status: 'failed', output: 'partial', error: 'child crashed', resultText: 'r' });
        const ended = await settled(snapshot.id);
        assert.deepEqual([ended.status, ended.error, ended.resultText], ['failed', 'child crashed', 'r']);
        assert.equal((await tasks.read(snapshot.id)).text, 'partial');
      },
    },
    {
      name: 'isolates completion listeners: one that throws or rejects is logged and the next still runs',
      async run({ tasks, start, settled, eventually, warnings }) {
        const calls: string[] = [];
        tasks.onTaskDone(() => {
          calls.push('first');
          throw new Error('listener broke');
        });
        tasks.onTaskDone(async () => {
          calls.push('second');
          throw new Error('async listener broke');
        });
        tasks.onTaskDone(() => void calls.push('third'));
        const { task, snapshot } = await start();
        task.settle();
        assert.equal((await settled(snapshot.id)).status, 'completed');
        await eventually(() => calls.length === 3 && warnings.length >= 2, 'every listener to run');
        assert.deepEqual(calls, ['first', 'second', 'third']);
      },
    },
    {
      name: 'tells an end to the exact owner instance only, never to a replacement with the same session id',
      async run({ tasks, start, settled, idle }) {
        const original = createOwner('s1');
        const replacement = createOwner('s1');
        const toOriginal: string[] = [];
        const toReplacement: string[] = [];
        tasks.onTaskDone((snapshot) => void toOriginal.push(snapshot.id), { owner: original });
        tasks.onTaskDone((snapshot) => void toReplacement.push(snapshot.id), { owner: replacement });
        const a = await start({ owner: original });
        const b = await start({ owner: replacement });
        a.task.settle();
        b.task.settle();
        await settled(a.snapshot.id);
        await settled(b.snapshot.id);
        await idle();
        assert.deepEqual(toOriginal, [a.snapshot.id]);
        assert.deepEqual(toReplacement, [b.snapshot.id]);
      },
    },
    {
      name: 'stops telling a listener once it unsubscribed',
      async run({ tasks, start, settled, idle }) {
        const seen: string[] = [];
        const unsubscribe = tasks.onTaskDone((snapshot) => void seen.push(snapshot.id));
        unsubscribe();
        const { task, snapshot } = await start();
        task.settle();
        await settled(snapshot.id);
        await idle();
        assert.deepEqual(seen, []);
      },
    },
  ],
};

export const stoppingCases: ConformanceGroup = {
  name: 'stopping',
  cases: [
    {
      name: 'kill requests cancel with the reason: stopping until the producer settles, asked once',
      async run({ tasks, start, settled }) {
        const { task, snapshot } = await start({ onCancel: 'ignore' });
        const stopping = await tasks.kill(snapshot.id, undefined, 'obsolete');
        assert.equal(stopping.status, 'stopping');
        assert.equal(typeof stopping.cancelRequestedAt, 'number');
        assert.deepEqual(task.cancelReasons, ['obsolete']);
        await tasks.kill(snapshot.id);
        assert.deepEqual(task.cancelReasons, ['obsolete']);
        task.settle({ status: 'killed', detail: { signal: 'SIGTERM' } });
        const ended = await settled(snapshot.id);
        assert.equal(ended.status, 'killed');
        assert.deepEqual(ended.detail, { signal: 'SIGTERM' });
      },
    },
    {
      name: 'kill returns a terminal task as it is, without asking the producer',
      async run({ tasks, start, settled }) {
        const { task, snapshot } = await start();
        task.settle();
        await settled(snapshot.id);
        assert.equal((await tasks.kill(snapshot.id)).status, 'completed');
        assert.deepEqual(task.cancelReasons, []);
      },
    },
    {
      name: 'a cancel that throws makes the kill fail with CANCEL_FAILED and the task keeps running',
      async run({ tasks, start }) {
        const { snapshot } = await start({ onCancel: 'throw' });
        const error = await failsWith(() => tasks.kill(snapshot.id), 'CANCEL_FAILED');
        assert.equal((error as { fault?: unknown }).fault, 'producer');
        const after = tasks.get(snapshot.id);
        assert.deepEqual([after.status, after.cancelRequestedAt], ['running', undefined]);
      },
    },
    {
      name: 'refuses to stop a non-cancellable task (CANCEL_NOT_SUPPORTED); disposal still stops it',
      async run({ tasks, start }) {
        const { task, snapshot } = await start({ cancellable: false, kind: 'monitor' });
        assert.equal(snapshot.cancellable, false);
        await failsWith(() => tasks.kill(snapshot.id), 'CANCEL_NOT_SUPPORTED');
        assert.deepEqual(task.cancelReasons, []);
        await tasks.dispose();
        assert.equal(task.cancelReasons.length, 1);
      },
    },
    {
      name: 'records who asked for a stop; rejects an unknown initiator or a reason that is not a string',
      async run({ tasks, start }) {
        const { task, snapshot } = await start({ onCancel: 'ignore' });
        assert.equal(tasks.setStopInitiator(snapshot.id, 'user').stopInitiator, 'user');
        await failsWith(
          () => tasks.setStopInitiator(snapshot.id, 'robot' as never),
          'INVALID_ARGUMENT',
          'initiator',
        );
        await failsWith(() => tasks.kill(snapshot.id, undefined, 42 as never), 'INVALID_ARGUMENT', 'reason');
        const killed = await tasks.kill(snapshot.id, undefined, 'enough', { initiator: 'model' });
        assert.equal(killed.stopInitiator, 'model');
        assert.deepEqual(task.cancelReasons, ['enough']);
      },
    },
    {
      name: 'moves foreground work to the background and wakes its waiters; a settled one answers settled',
      async run({ tasks, start }) {
        const moved = await start({ background: false });
        assert.equal(moved.snapshot.isBackgrounded, false);
        assert.deepEqual(
          tasks.list().map((task) => task.id),
          [moved.snapshot.id],
          'foreground work is registered too',
        );
        const waiting = tasks.waitForBackground(moved.snapshot.id);
        assert.equal(tasks.requestBackground(moved.snapshot.id).isBackgrounded, true);
        assert.equal(await waiting, 'backgrounded');
        assert.equal(await tasks.waitForBackground(moved.snapshot.id), 'backgrounded');

        const ending = await start({ background: false });
        const controller = new AbortController();
        const aborted = tasks.waitForBackground(ending.snapshot.id, undefined, controller.signal);
        const settledFirst = tasks.waitForBackground(ending.snapshot.id);
        controller.abort();
        await failsWith(() => aborted, 'WAIT_ABORTED');
        ending.task.settle();
        assert.equal(await settledFirst, 'settled');
        assert.equal(tasks.requestBackground(ending.snapshot.id).isBackgrounded, false);
      },
    },
    {
      name: 'forwards messages to running tasks that accept them, and refuses the rest',
      async run({ tasks, start, settled }) {
        const { task, snapshot } = await start({ acceptsMessages: true });
        tasks.sendMessage(snapshot.id, 'also check the docs');
        assert.deepEqual(task.messages, ['also check the docs']);
        const mute = await start();
        await failsWith(() => tasks.sendMessage(mute.snapshot.id, 'hi'), 'MESSAGES_NOT_SUPPORTED');
        await failsWith(() => tasks.sendMessage(snapshot.id, ''), 'INVALID_ARGUMENT', 'message');
        task.settle();
        await settled(snapshot.id);
        await failsWith(() => tasks.sendMessage(snapshot.id, 'late'), 'TASK_NOT_RUNNING');
      },
    },
  ],
};

export const claimCases: ConformanceGroup = {
  name: 'claims',
  cases: [
    {
      name: 'the claim is one-shot: live tasks cannot be claimed, the first claimant wins, a returned claim can be taken again',
      async run({ tasks, start, settled }) {
        const { task, snapshot } = await start();
        assert.equal(tasks.claim(snapshot.id), false);
        task.settle();
        await settled(snapshot.id);
        assert.equal(tasks.claim(snapshot.id), true);
        assert.equal(tasks.claim(snapshot.id), false);
        assert.equal(tasks.get(snapshot.id).reported, true);
        tasks.releaseClaim(snapshot.id);
        assert.equal(tasks.get(snapshot.id).reported, false);
        assert.equal(tasks.claim(snapshot.id), true);
      },
    },
    {
      name: 'a claim settlement handed to several waiters stays taken until each of them returned it',
      async run({ tasks, start }) {
        const { task, snapshot } = await start();
        const first = tasks.wait(snapshot.id, 60_000);
        const second = tasks.wait(snapshot.id, 60_000);
        task.settle();
        assert.equal((await first).reported, true);
        assert.equal((await second).reported, true);
        tasks.releaseClaim(snapshot.id);
        assert.equal(tasks.get(snapshot.id).reported, true, 'the other waiter still received the end');
        assert.equal(tasks.claim(snapshot.id), false);
        tasks.releaseClaim(snapshot.id);
        assert.equal(tasks.get(snapshot.id).reported, false);
        assert.equal(tasks.claim(snapshot.id), true);
      },
    },
    {
      name: 'a claim is returned only by a holder of the same attempt: a resumed task keeps its own',
      async run({ tasks, start, settled }) {
        const owner = createOwner('s1');
        const first = await start({ owner, kind: 'workflow' });
        const { id } = first.snapshot;
        first.task.settle({ status: 'failed' });
        const firstEnd = await settled(id, owner);
        assert.equal(tasks.claim(id, owner), true);
        const second = await start({ owner, kind: 'workflow', spec: { resumeId: id } });
        second.task.settle();
        await settled(id, owner);
        assert.equal(tasks.claim(id, owner), true, 'the resumed attempt has a claim of its own');
        // The first attempt's notifier gives its claim back late: the second attempt's claim stays.
        tasks.releaseClaim(id, owner, { attempt: firstEnd.attempt });
        assert.equal(tasks.get(id, owner).reported, true);
        tasks.releaseClaim(id, owner, { attempt: second.snapshot.attempt });
        assert.equal(tasks.get(id, owner).reported, false);
        await failsWith(() => tasks.releaseClaim(id, owner, { attempt: 0 }), 'INVALID_ARGUMENT', 'attempt');
      },
    },
    {
      name: 'a read of an earlier attempt that ends after a resume does not claim the new attempt',
      async run({ tasks, onCleanup, start, settled, eventually }) {
        let finishRead: ((text: string) => void) | undefined;
        let settleFirst: ((outcome: TaskOutcome) => void) | undefined;
        const { id } = await tasks.start({
          kind: 'workflow',
          label: 'slow reader',
          run: () => ({
            cancel: () => settleFirst?.({ status: 'killed' }),
            done: new Promise<TaskOutcome>((resolve) => {
              settleFirst = resolve;
            }),
            readOutput: () => new Promise<string>((resolve) => (finishRead = resolve)),
          }),
        });
        onCleanup(() => finishRead?.(''));
        settleFirst?.({ status: 'failed' });
        await settled(id);
        const reading = tasks.read(id);
        await eventually(() => finishRead !== undefined, 'the read to reach the producer');
        const second = await start({ kind: 'workflow', spec: { resumeId: id } });
        second.task.settle();
        await settled(id);
        finishRead?.('output of the first attempt');
        const read = await reading;
        assert.equal(read.text, 'output of the first attempt');
        assert.deepEqual([read.snapshot.status, read.snapshot.attempt], ['failed', 1]);
        assert.equal(tasks.get(id).reported, false);
        assert.equal(tasks.claim(id, createTrustedCaller('notifier')), true);
      },
    },
  ],
};
