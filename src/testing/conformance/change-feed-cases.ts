/**
 * The change feed: every change of the caller-visible set with its reason, and the level signal — the
 * whole set that caller may see after the change — limited to what each subscriber may see.
 */
import assert from 'node:assert/strict';
import { type Caller, createOwner, type TaskChange } from '../../tasks/index.js';
import type { CaseContext } from './case-context.js';
import type { ConformanceGroup } from './conformance-case.js';

/** Records `[reason, task id, size of the visible set]` for every change `caller` is told. */
function recordChanges({ tasks }: CaseContext, caller: Caller): Array<[string, string, number]> {
  const changes: Array<[string, string, number]> = [];
  tasks.onTasksChanged(
    (change) => void changes.push([change.reason, change.task.id, change.tasks().length]),
    {
      caller,
    },
  );
  return changes;
}

export const changeFeedCases: ConformanceGroup = {
  name: 'change feed',
  cases: [
    {
      name: "reports start, stop, settlement, claim and removal of a caller's tasks with the visible set",
      async run(context) {
        const { tasks } = context;
        const owner = createOwner('s1');
        const changes = recordChanges(context, owner);
        await context.start({ owner: createOwner('s2') });
        const { snapshot } = await context.start({ owner, kind: 'bash' });
        const { id } = snapshot;
        await tasks.kill(id, owner);
        await context.settled(id, owner);
        assert.equal(tasks.claim(id, owner), true);
        await owner.dispose();
        assert.deepEqual(changes, [
          ['started', id, 1],
          ['stopping', id, 1],
          ['settled', id, 1],
          ['claimed', id, 1],
          ['removed', id, 0],
        ]);
      },
    },
    {
      name: 'reports producer facts (updated), a move to the background and a returned claim',
      async run(context) {
        const { tasks } = context;
        const changes = recordChanges(context, undefined);
        const { task, snapshot } = await context.start({ background: false });
        const { id } = snapshot;
        task.context?.updateDetail({ pid: 7 });
        tasks.requestBackground(id);
        task.settle();
        await context.settled(id);
        assert.equal(tasks.claim(id), true);
        tasks.releaseClaim(id);
        await context.idle();
        assert.deepEqual(
          changes.map(([reason]) => reason),
          ['started', 'updated', 'backgrounded', 'settled', 'claimed', 'unclaimed'],
        );
      },
    },
    {
      name: 'gives each subscriber the set its caller may see, and only the changes it may see',
      async run(context) {
        const { tasks, trusted } = context;
        const alice = createOwner('alice');
        const levels = new Map<string, Array<readonly string[]>>();
        const subscribe = (name: string, caller: Caller) => {
          const seen: Array<readonly string[]> = [];
          levels.set(name, seen);
          tasks.onTasksChanged(
            (change: TaskChange) => void seen.push(change.tasks().map((task) => task.id)),
            {
              caller,
            },
          );
        };
        subscribe('alice', alice);
        subscribe('anonymous', undefined);
        subscribe('trusted', trusted);
        const owned = (await context.start({ owner: alice })).snapshot.id;
        const ownerless = (await context.start()).snapshot.id;
        const other = (await context.start({ owner: createOwner('bob') })).snapshot.id;
        await context.eventually(
          () => levels.get('trusted')?.length === 3,
          'the trusted caller to see three starts',
        );
        assert.deepEqual(levels.get('alice'), [[owned]]);
        assert.deepEqual(levels.get('anonymous'), [[ownerless]]);
        assert.deepEqual(levels.get('trusted'), [[owned], [owned, ownerless], [owned, ownerless, other]]);
      },
    },
    {
      name: 'isolates a change listener that throws, and stops telling one that unsubscribed',
      async run(context) {
        const { tasks, warnings } = context;
        tasks.onTasksChanged(() => {
          throw new Error('view broke');
        });
        const seen: string[] = [];
        tasks.onTasksChanged((change) => void seen.push(change.reason));
        const gone: string[] = [];
        tasks.onTasksChanged((change) => void gone.push(change.reason))();
        await context.start();
        await context.idle();
        assert.deepEqual(seen, ['started']);
        assert.deepEqual(gone, []);
        assert.ok(warnings.length > 0, 'the failing listener is logged');
      },
    },
  ],
};
