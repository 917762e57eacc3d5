/**
 * Ids, owners and not-found: `<kind>-N` with one counter per kind, every access authorized, and an
 * unauthorized access indistinguishable from an unknown id.
 */
import assert from 'node:assert/strict';
import { createOwner } from '../../tasks/index.js';
import { type CaseContext, failsWith, failure } from './case-context.js';
import type { ConformanceGroup } from './conformance-case.js';

/** What a caller learns from a failure: its code, its fault and its message with the id blanked out. */
function shapeOf(error: unknown, id: string): unknown {
  const { code, fault, message } = error as { code?: unknown; fault?: unknown; message?: unknown };
  return { code, fault, message: typeof message === 'string' ? message.replaceAll(id, '<id>') : message };
}

/** Every way a caller can reach a task by id. */
function accessesOf({ tasks }: CaseContext): ReadonlyArray<readonly [string, (id: string) => unknown]> {
  const bob = createOwner('bob');
  return [
    ['get', (id) => tasks.get(id, bob)],
    ['read', (id) => tasks.read(id, bob)],
    ['openCursor', (id) => tasks.openCursor(id, bob)],
    ['wait', (id) => tasks.wait(id, 1_000, bob)],
    ['kill', (id) => tasks.kill(id, bob)],
    ['claim', (id) => tasks.claim(id, bob)],
    ['releaseClaim', (id) => tasks.releaseClaim(id, bob)],
    ['requestBackground', (id) => tasks.requestBackground(id, bob)],
    ['waitForBackground', (id) => tasks.waitForBackground(id, bob)],
    ['setStopInitiator', (id) => tasks.setStopInitiator(id, 'user', bob)],
    ['sendMessage', (id) => tasks.sendMessage(id, 'hello', bob)],
    ['get as an anonymous caller', (id) => tasks.get(id)],
  ];
}

export const identityCases: ConformanceGroup = {
  name: 'ids, owners and not-found',
  cases: [
    {
      name: 'numbers ids <kind>-N with one counter per kind',
      async run({ start }) {
        const ids: string[] = [];
        for (const kind of ['bash', 'agent', 'bash', 'workflow', 'agent', 'bash']) {
          ids.push((await start({ kind })).snapshot.id);
        }
        assert.deepEqual(ids, ['bash-1', 'agent-1', 'bash-2', 'workflow-1', 'agent-2', 'bash-3']);
      },
    },
    {
      name: 'never hands out an id again, even after its task was forgotten',
      limits: { maxRetainedTasksPerOwner: 1 },
      async run({ tasks, start, settled }) {
        const first = await start({ kind: 'bash' });
        first.task.settle();
        await settled(first.snapshot.id);
        const second = await start({ kind: 'bash' });
        second.task.settle();
        await settled(second.snapshot.id);
        await failsWith(() => tasks.get(first.snapshot.id), 'TASK_NOT_FOUND');
        assert.equal((await start({ kind: 'bash' })).snapshot.id, 'bash-3');
      },
    },
    {
      name: 'treats malformed ids as unknown',
      async run({ tasks }) {
        for (const id of ['', 'nonsense', 'bash-0', 42, null, undefined]) {
          await failsWith(() => tasks.get(id as string), 'TASK_NOT_FOUND');
        }
      },
    },
    {
      name: "shows another session's task exactly like an unknown id, through every access",
      async run(context) {
        const alice = createOwner('alice');
        const { snapshot } = await context.start({ owner: alice, acceptsMessages: true, background: false });
        const unknown = 'scripted-999';
        for (const [what, access] of accessesOf(context)) {
          const foreign = await failure(() => access(snapshot.id), `${what} of a foreign task`);
          const missing = await failure(() => access(unknown), `${what} of an unknown task`);
          assert.equal((foreign as { code?: unknown }).code, 'TASK_NOT_FOUND', what);
          assert.deepEqual(shapeOf(foreign, snapshot.id), shapeOf(missing, unknown), what);
        }
        // Nothing the refused calls asked for happened.
        assert.deepEqual(context.tasks.get(snapshot.id, alice), snapshot);
      },
    },
    {
      name: 'grants access by session equality, to a new owner instance of the same session',
      async run({ tasks, start }) {
        const { snapshot } = await start({ owner: createOwner('s1') });
        assert.equal(tasks.get(snapshot.id, createOwner('s1')).id, snapshot.id);
        assert.equal(tasks.get(snapshot.id, createOwner('s1')).ownerSessionId, 's1');
      },
    },
    {
      name: 'opens ownerless tasks to anonymous callers only, owned ones to their session; a trusted caller sees all',
      async run({ tasks, start, trusted }) {
        const owner = createOwner('s1');
        const ownerless = (await start()).snapshot;
        const owned = (await start({ owner })).snapshot;
        const other = (await start({ owner: createOwner('s2') })).snapshot;
        const ids = (caller?: Parameters<typeof tasks.list>[0]) => tasks.list(caller).map((task) => task.id);
        assert.deepEqual(ids(), [ownerless.id]);
        assert.deepEqual(ids(owner), [owned.id]);
        assert.deepEqual(ids(trusted), [ownerless.id, owned.id, other.id]);
        await failsWith(() => tasks.get(ownerless.id, owner), 'TASK_NOT_FOUND');
        await failsWith(() => tasks.get(owned.id), 'TASK_NOT_FOUND');
        assert.equal(tasks.get(other.id, trusted).ownerSessionId, 's2');
      },
    },
    {
      name: 'resumes a finished task under its id: a new attempt with a fresh settlement surface',
      async run({ tasks, start, settled, idle, eventually }) {
        let generation = 1;
        const owner = createOwner('s1', { branchGeneration: () => generation });
        const ends: string[] = [];
        tasks.onTaskDone((done) => void ends.push(`${done.id}:${done.attempt}:${done.status}`));
        const first = await start({ owner, kind: 'workflow' });
        const { id } = first.snapshot;
        first.task.settle({ status: 'failed', error: 'step 2 failed' });
        await settled(id);
        assert.equal(tasks.claim(id, owner), true);

        generation = 2;
        const second = await start({ owner, kind: 'workflow', spec: { resumeId: id } });
        const resumed = second.snapshot;
        assert.deepEqual(
          [resumed.id, resumed.status, resumed.reported, resumed.endedAt, resumed.error, resumed.attempt],
          [id, 'running', false, undefined, undefined, 2],
        );
        assert.equal(resumed.branchGeneration, 2);
        // The first attempt's late outcome does not settle the second.
        first.task.settle({ status: 'completed' });
        await idle();
        assert.equal(tasks.get(id, owner).status, 'running');
        second.task.settle();
        await settled(id);
        await eventually(() => ends.length === 2, 'the second attempt to be told');
        assert.deepEqual(ends, [`${id}:1:failed`, `${id}:2:completed`]);
        assert.equal((await start({ owner, kind: 'workflow' })).snapshot.id, 'workflow-2');
      },
    },
    {
      name: "refuses to resume a live task (TASK_NOT_RESUMABLE), another session's (TASK_NOT_FOUND), or another kind's",
      async run({ tasks, producer, start }) {
        const owner = createOwner('s1');
        const { snapshot } = await start({ owner, kind: 'agent' });
        const live = producer({ owner, kind: 'agent', spec: { resumeId: snapshot.id } });
        await failsWith(() => tasks.start(live.spec), 'TASK_NOT_RESUMABLE');
        const foreign = producer({
          owner: createOwner('s2'),
          kind: 'agent',
          spec: { resumeId: snapshot.id },
        });
        await failsWith(() => tasks.start(foreign.spec), 'TASK_NOT_FOUND');
        const otherKind = producer({ owner, kind: 'bash', spec: { resumeId: snapshot.id } });
        await failsWith(() => tasks.start(otherKind.spec), 'INVALID_ARGUMENT', 'resumeId');
        assert.equal(live.runCalls + foreign.runCalls + otherKind.runCalls, 0);
      },
    },
  ],
};
