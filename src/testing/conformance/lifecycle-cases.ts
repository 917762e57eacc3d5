/**
 * Owner lifecycle and disposal: disposing an owner cancels its live tasks, awaits their ends and forgets
 * them; disposing the service cancels every live task and waits for compliant producers.
 */
import assert from 'node:assert/strict';
import { createOwner, type TaskSnapshot } from '../../tasks/index.js';
import { failsWith } from './case-context.js';
import type { ConformanceGroup } from './conformance-case.js';

export const ownerLifecycleCases: ConformanceGroup = {
  name: 'owner lifecycle',
  cases: [
    {
      name: 'attaches one cleanup per owner, however many tasks it starts',
      async run({ start }) {
        const owner = createOwner('s1');
        const attach = owner.addCleanup.bind(owner);
        let attached = 0;
        owner.addCleanup = (cleanup) => {
          attached += 1;
          return attach(cleanup);
        };
        for (let index = 0; index < 3; index += 1) await start({ owner });
        assert.equal(attached, 1);
      },
    },
    {
      name: 'disposing the owner cancels its live tasks, awaits their ends and forgets its tasks',
      async run({ tasks, start, settled, isPending, trusted }) {
        const owner = createOwner('s1');
        const slow = await start({ owner, onCancel: 'ignore' });
        const quick = await start({ owner });
        const finished = await start({ owner });
        const bystander = await start({ owner: createOwner('s2') });
        finished.task.settle();
        await settled(finished.snapshot.id);

        const disposal = owner.dispose();
        assert.equal(await isPending(disposal), true, 'disposal waits for the slow producer');
        assert.equal(slow.task.cancelReasons.length, 1);
        assert.equal(quick.task.cancelReasons.length, 1);
        assert.deepEqual(finished.task.cancelReasons, []);
        slow.task.settle({ status: 'killed' });
        await disposal;
        assert.deepEqual(tasks.list(owner), []);
        assert.deepEqual(
          tasks.list(trusted).map((task) => task.id),
          [bystander.snapshot.id],
        );
        assert.deepEqual(bystander.task.cancelReasons, []);
      },
    },
    {
      name: "the ends an owner's disposal causes are reported: no notifier can claim them",
      async run({ tasks, start, trusted }) {
        const owner = createOwner('s1');
        const claimed: string[] = [];
        tasks.onTaskDone((snapshot) => {
          if (tasks.claim(snapshot.id, trusted)) claimed.push(snapshot.id);
        });
        const ends = new Map<string, TaskSnapshot>();
        tasks.onTasksChanged(
          (change) => void (change.reason === 'settled' && ends.set(change.task.id, change.task)),
          { caller: trusted },
        );
        const killed = await start({ owner });
        const broken = await start({ owner, onCancel: 'throw' });
        await owner.dispose();
        const summary = (id: string) => [ends.get(id)?.status, ends.get(id)?.reported];
        assert.deepEqual(summary(killed.snapshot.id), ['killed', true]);
        assert.deepEqual(summary(broken.snapshot.id), ['failed', true]);
        assert.deepEqual(claimed, []);
      },
    },
    {
      name: "a replacement owner with the same session id is never cancelled by the old owner's cleanup",
      async run({ tasks, start }) {
        const old = createOwner('s1');
        const replacement = createOwner('s1');
        await start({ owner: old });
        const kept = await start({ owner: replacement });
        await old.dispose();
        assert.deepEqual(kept.task.cancelReasons, []);
        assert.deepEqual(
          tasks.list(replacement).map((task) => task.id),
          [kept.snapshot.id],
        );
        assert.equal(tasks.get(kept.snapshot.id, replacement).status, 'running');
      },
    },
    {
      name: "refuses a task started while the owner's disposal is cancelling its tasks (OWNER_DISPOSED)",
      async run({ tasks, producer, start, trusted }) {
        const owner = createOwner('s1');
        await start({ owner });
        const late = producer({ owner, label: 'late' });
        let lateStart: Promise<TaskSnapshot> | undefined;
        // A viewer reacts to the stop by starting more work for the same session, within the cancel step.
        tasks.onTasksChanged(
          (change) => {
            if (change.reason !== 'stopping' || lateStart !== undefined) return;
            lateStart = tasks.start(late.spec);
            // Checked below, after the disposal; an asynchronous refusal is not unhandled meanwhile.
            lateStart.catch(() => {});
          },
          { caller: owner },
        );
        await owner.dispose();
        assert.ok(lateStart, 'the stop was announced');
        await failsWith(() => lateStart, 'OWNER_DISPOSED');
        assert.equal(late.runCalls, 0);
        assert.deepEqual(tasks.list(trusted), []);
      },
    },
  ],
};

export const retentionCases: ConformanceGroup = {
  name: 'retention',
  cases: [
    {
      name: 'forgets the oldest finished tasks beyond maxRetainedTasksPerOwner, never live ones',
      limits: { maxRetainedTasksPerOwner: 2 },
      async run({ tasks, start, settled }) {
        const live = await start();
        const ids: string[] = [];
        for (let index = 0; index < 4; index += 1) {
          const { task, snapshot } = await start();
          ids.push(snapshot.id);
          task.settle();
          await settled(snapshot.id);
        }
        assert.deepEqual(
          tasks.list().map((task) => task.id),
          [live.snapshot.id, ids[2], ids[3]],
        );
        await failsWith(() => tasks.get(ids[0]!), 'TASK_NOT_FOUND');
      },
    },
  ],
};

export const disposalCases: ConformanceGroup = {
  name: 'disposal',
  cases: [
    {
      name: 'cancels every live task and waits for compliant producers; disposing again resolves too',
      async run({ tasks, start, isPending }) {
        const owner = createOwner('s1');
        const owned = await start({ owner });
        const stubborn = await start({ onCancel: 'ignore' });
        const disposal = tasks.dispose();
        assert.equal(await isPending(disposal), true, 'disposal waits for the producer that has not settled');
        assert.equal(owned.task.cancelReasons.length, 1);
        assert.equal(stubborn.task.cancelReasons.length, 1);
        stubborn.task.settle({ status: 'killed' });
        await disposal;
        await tasks.dispose();
      },
    },
    {
      name: 'a cancel that returns but never settles keeps disposal waiting (a slow stop and a broken one look alike)',
      async run({ tasks, start, isPending }) {
        const stuck = await start({ onCancel: 'ignore' });
        const disposal = tasks.dispose();
        for (let round = 0; round < 3; round += 1) assert.equal(await isPending(disposal), true);
        stuck.task.settle({ status: 'killed' });
        await disposal;
      },
    },
    {
      name: 'refuses a task started while disposal is cancelling the live ones (SERVICE_DISPOSED)',
      async run({ tasks, producer, start }) {
        await start();
        const late = producer({ label: 'late' });
        let lateStart: Promise<TaskSnapshot> | undefined;
        tasks.onTasksChanged((change) => {
          if (change.reason !== 'stopping' || lateStart !== undefined) return;
          lateStart = tasks.start(late.spec);
          // Checked below, after the disposal; an asynchronous refusal is not unhandled meanwhile.
          lateStart.catch(() => {});
        });
        await tasks.dispose();
        assert.ok(lateStart, 'the stop was announced');
        await failsWith(() => lateStart, 'SERVICE_DISPOSED');
        assert.equal(late.runCalls, 0);
      },
    },
    {
      name: 'tells no completion listener once it began: what it ends is reported, never notified',
      async run({ tasks, start, trusted }) {
        const told: string[] = [];
        tasks.onTaskDone((snapshot) => void told.push(snapshot.id));
        const ends = new Map<string, TaskSnapshot>();
        tasks.onTasksChanged(
          (change) => void (change.reason === 'settled' && ends.set(change.task.id, change.task)),
          {
            caller: trusted,
          },
        );
        const owner = createOwner('s1');
        const killed = await start({ owner });
        const broken = await start({ onCancel: 'throw' });
        const late = await start({ onCancel: 'ignore' });
        const disposal = tasks.dispose();
        // A producer that ends on its own after disposal began is not told either.
        late.task.settle({ status: 'completed' });
        await disposal;
        assert.deepEqual(told, []);
        const summary = (id: string) => [ends.get(id)?.status, ends.get(id)?.reported];
        assert.deepEqual(summary(killed.snapshot.id), ['killed', true]);
        assert.deepEqual(summary(broken.snapshot.id), ['failed', true]);
        assert.deepEqual(summary(late.snapshot.id), ['completed', true]);
      },
    },
    {
      name: 'removes the records it ended and announces each as removed; finished ones stay readable',
      async run({ tasks, start, settled, trusted }) {
        const finished = await start({ streaming: false });
        finished.task.settle({ status: 'completed', output: 'kept' });
        await settled(finished.snapshot.id);
        const owner = createOwner('s1');
        const owned = await start({ owner });
        const ownerless = await start({ onCancel: 'throw' });
        const removed: Array<[string, readonly string[]]> = [];
        tasks.onTasksChanged(
          (change) => {
            if (change.reason === 'removed')
              removed.push([change.task.id, change.tasks().map((task) => task.id)]);
          },
          { caller: trusted },
        );
        await tasks.dispose();
        assert.deepEqual(removed.map(([id]) => id).sort(), [owned.snapshot.id, ownerless.snapshot.id].sort());
        for (const [id, visible] of removed) assert.ok(!visible.includes(id), `${id} is gone from the set`);
        assert.deepEqual(removed.at(-1)?.[1], [finished.snapshot.id]);
        assert.deepEqual(
          tasks.list(trusted).map((task) => task.id),
          [finished.snapshot.id],
        );
        await failsWith(() => tasks.get(owned.snapshot.id, owner), 'TASK_NOT_FOUND');
        assert.equal((await tasks.read(finished.snapshot.id)).text, 'kept');
      },
    },
    {
      name: 'detaches from owners that outlive it',
      async run({ tasks, start }) {
        const owner = createOwner('s1');
        const { task } = await start({ owner });
        await tasks.dispose();
        const cancels = task.cancelReasons.length;
        await owner.dispose();
        assert.equal(task.cancelReasons.length, cancels);
      },
    },
  ],
};
