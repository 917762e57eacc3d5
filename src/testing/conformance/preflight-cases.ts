/**
 * Preflight and run-once: every check that can fail happens before `run()`, `run()` is called exactly
 * once, and a start that fails — before or inside `run()` — registers nothing and spends no id.
 */
import assert from 'node:assert/strict';
import {
  createOwner,
  type TaskFacts,
  type TaskHooks,
  type TaskOutcome,
  type TaskSpec,
} from '../../tasks/index.js';
import { failsWith, failure } from './case-context.js';
import type { ConformanceGroup } from './conformance-case.js';

/** A producer's own facts beside the common ones, as a provider must keep them. */
interface CommandFacts extends TaskFacts {
  readonly command?: string;
}

const INVALID_SPECS: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
  ['a missing kind', { kind: undefined }, 'kind'],
  ['a kind with capitals', { kind: 'Bash' }, 'kind'],
  ['a blank label', { label: '   ' }, 'label'],
  ['a label over 2000 characters', { label: 'x'.repeat(2001) }, 'label'],
  ['a zero outputLimitBytes', { outputLimitBytes: 0 }, 'outputLimitBytes'],
  ['a fractional outputLimitBytes', { outputLimitBytes: 1.5 }, 'outputLimitBytes'],
  ['a background that is not a boolean', { background: 'yes' }, 'background'],
  ['a negative branchGeneration', { branchGeneration: -1 }, 'branchGeneration'],
  ['an array as detail', { detail: [] }, 'detail'],
  ['an owner that is not an Owner', { owner: {} }, 'owner'],
  ['a missing run', { run: undefined }, 'run'],
  ['a run that is not a function', { run: 'go' }, 'run'],
  ['a traceparent that is not the W3C form', { traceparent: '01-abc-def-00' }, 'traceparent'],
  ['an all-zero traceparent', { traceparent: `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01` }, 'traceparent'],
];

export const preflightCases: ConformanceGroup = {
  name: 'preflight and run-once',
  cases: [
    {
      name: 'rejects each malformed spec field with INVALID_TASK_SPEC naming the field, before run()',
      async run({ tasks, producer }) {
        for (const [what, patch, field] of INVALID_SPECS) {
          const task = producer();
          const error = await failsWith(
            () => tasks.start({ ...task.spec, ...patch } as TaskSpec),
            'INVALID_TASK_SPEC',
            field,
          );
          assert.equal((error as { context?: { field?: unknown } }).context?.field, field, what);
          assert.equal(task.runCalls, 0, `${what}: run() was called`);
        }
        await failsWith(() => tasks.start(null as unknown as TaskSpec), 'INVALID_TASK_SPEC');
        assert.deepEqual(tasks.list(), []);
      },
    },
    {
      name: "projects a task's traceparent into its snapshots (a given one at least; a traced provider its span's)",
      async run({ tasks, producer }) {
        const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
        const task = producer({ spec: { traceparent } });
        const snapshot = await tasks.start(task.spec);
        // A provider that traces stores its own span's context, continuing the given trace.
        assert.ok(typeof snapshot.traceparent === 'string', 'no traceparent in the snapshot');
        assert.equal(snapshot.traceparent.split('-')[1], traceparent.split('-')[1]);
        assert.equal(tasks.get(snapshot.id).traceparent, snapshot.traceparent);
        assert.equal(tasks.list()[0]?.traceparent, snapshot.traceparent);
        task.settle();
        const settled = await tasks.wait(snapshot.id, 5_000);
        assert.equal(settled.traceparent, snapshot.traceparent);
      },
    },
    {
      name: 'fails with NO_CONTROLLER before run() while no controller is attached, and again once the last detaches',
      controller: false,
      async run({ tasks, producer }) {
        const early = producer();
        await failsWith(() => tasks.start(early.spec), 'NO_CONTROLLER');
        assert.equal(early.runCalls, 0);
        const detachA = tasks.attachController('a');
        const detachB = tasks.attachController('b');
        await tasks.start(producer().spec);
        detachA();
        await tasks.start(producer().spec);
        detachB();
        const late = producer();
        await failsWith(() => tasks.start(late.spec), 'NO_CONTROLLER');
        assert.equal(late.runCalls, 0);
        await failsWith(() => tasks.attachController(''), 'INVALID_ARGUMENT');
      },
    },
    {
      name: 'a controller scoped to an owner serves that session only; ownerless work needs a service-wide one',
      controller: false,
      async run({ tasks, producer, start }) {
        const alice = createOwner('alice');
        const detach = tasks.attachController('alice-tools', { owner: alice });
        await start({ owner: alice });
        // Session equality: a new owner instance of the same session is served too.
        await start({ owner: createOwner('alice') });
        const bob = producer({ owner: createOwner('bob') });
        const error = await failsWith(() => tasks.start(bob.spec), 'NO_CONTROLLER');
        assert.match(String((error as Error).message), /bob/);
        const ownerless = producer();
        await failsWith(() => tasks.start(ownerless.spec), 'NO_CONTROLLER');
        assert.equal(bob.runCalls + ownerless.runCalls, 0);
        detach();
        const late = producer({ owner: alice });
        await failsWith(() => tasks.start(late.spec), 'NO_CONTROLLER');
        assert.equal(late.runCalls, 0);
        const detachAll = tasks.attachController('everyone');
        await start({ owner: createOwner('bob') });
        await start();
        detachAll();
      },
    },
    {
      name: 'a controller scoped by a predicate serves the owners it accepts, checked at each start; one of ownerless work serves no owner',
      controller: false,
      async run({ tasks, producer, start }) {
        const served = new Set(['s1']);
        tasks.attachController('children', { serves: (owner) => served.has(owner.sessionId) });
        await start({ owner: createOwner('s1') });
        const later = producer({ owner: createOwner('s2') });
        await failsWith(() => tasks.start(later.spec), 'NO_CONTROLLER');
        served.add('s2');
        await tasks.start(later.spec);
        assert.equal(later.runCalls, 1);
        await failsWith(() => tasks.start(producer().spec), 'NO_CONTROLLER');
        // A controller of ownerless work (a host's own API) serves no session.
        tasks.attachController('host', { ownerless: true });
        await start();
        const stranger = producer({ owner: createOwner('s3') });
        await failsWith(() => tasks.start(stranger.spec), 'NO_CONTROLLER');
        assert.equal(stranger.runCalls, 0);
        await failsWith(() => tasks.attachController('nobody', {}), 'INVALID_ARGUMENT');
        await failsWith(
          () => tasks.attachController('both', { owner: createOwner('s1'), serves: () => true }),
          'INVALID_ARGUMENT',
        );
        await failsWith(
          () => tasks.attachController('bad', { serves: 'all' as never }),
          'INVALID_ARGUMENT',
          'serves',
        );
        await failsWith(
          () => tasks.attachController('bad', { owner: {} as never }),
          'INVALID_ARGUMENT',
          'owner',
        );
        await failsWith(
          () => tasks.attachController('bad', { servs: () => true } as never),
          'UNKNOWN_OPTION',
        );
      },
    },
    {
      name: 'foreground work needs no controller (its call collects it); moving it to the background does',
      controller: false,
      async run({ tasks, start }) {
        const owner = createOwner('s1');
        const { snapshot } = await start({ owner, background: false });
        await failsWith(() => tasks.requestBackground(snapshot.id, owner), 'NO_CONTROLLER');
        assert.equal(tasks.get(snapshot.id, owner).isBackgrounded, false, 'it stays in the foreground');
        tasks.attachController('s1-tools', { owner });
        assert.equal(tasks.requestBackground(snapshot.id, owner).isBackgrounded, true);
      },
    },
    {
      name: 'fails with OWNER_DISPOSED for a disposed owner, before run()',
      async run({ tasks, producer }) {
        const owner = createOwner('conformance-owner');
        await owner.dispose();
        const task = producer({ owner });
        await failsWith(() => tasks.start(task.spec), 'OWNER_DISPOSED');
        assert.equal(task.runCalls, 0);
      },
    },
    {
      name: 'fails with SERVICE_DISPOSED once the service is disposed, before run()',
      async run({ tasks, producer }) {
        await tasks.dispose();
        const task = producer();
        await failsWith(() => tasks.start(task.spec), 'SERVICE_DISPOSED');
        assert.equal(task.runCalls, 0);
      },
    },
    {
      name: 'admits at most maxLiveTasksPerOwner live tasks per session; stopping counts until settled',
      limits: { maxLiveTasksPerOwner: 2 },
      async run({ tasks, producer, start, settled }) {
        const owner = createOwner('s1');
        const { task: first, snapshot: a } = await start({ owner, onCancel: 'ignore' });
        await start({ owner });
        const third = producer({ owner });
        await failsWith(() => tasks.start(third.spec), 'ADMISSION_LIMIT');
        assert.equal(third.runCalls, 0);

        await tasks.kill(a.id, owner);
        assert.equal(tasks.get(a.id, owner).status, 'stopping');
        await failsWith(() => tasks.start(third.spec), 'ADMISSION_LIMIT');

        first.settle({ status: 'killed' });
        await settled(a.id);
        await tasks.start(third.spec);
        assert.equal(third.runCalls, 1);
        // Another session has its own allowance.
        await start({ owner: createOwner('s2') });
      },
    },
    {
      name: 'ownerless tasks share one admission bucket with the per-owner limit',
      limits: { maxLiveTasksPerOwner: 2 },
      async run({ tasks, producer, start, settled }) {
        const first = await start();
        await start();
        const third = producer();
        const error = await failsWith(() => tasks.start(third.spec), 'ADMISSION_LIMIT');
        assert.match(String((error as Error).message), /ownerless/);
        assert.equal(third.runCalls, 0);
        // Owners keep their own allowance.
        await start({ owner: createOwner('s1') });
        first.task.settle();
        await settled(first.snapshot.id);
        await tasks.start(third.spec);
        assert.equal(third.runCalls, 1);
      },
    },
    {
      name: 'the ownerless bucket takes its own limit when one is given (maxLiveOwnerlessTasks)',
      limits: { maxLiveTasksPerOwner: 1, maxLiveOwnerlessTasks: 3 },
      async run({ tasks, producer, start }) {
        for (let index = 0; index < 3; index += 1) await start();
        await failsWith(() => tasks.start(producer().spec), 'ADMISSION_LIMIT');
        const owner = createOwner('s1');
        await start({ owner });
        await failsWith(() => tasks.start(producer({ owner }).spec), 'ADMISSION_LIMIT');
      },
    },
    {
      name: 'bounds the whole service with maxLiveTasks, ownerless tasks included',
      limits: { maxLiveTasks: 1 },
      async run({ tasks, producer, start }) {
        await start();
        const second = producer({ owner: createOwner('s1') });
        await failsWith(() => tasks.start(second.spec), 'ADMISSION_LIMIT');
        await failsWith(() => tasks.start(producer().spec), 'ADMISSION_LIMIT');
        assert.equal(second.runCalls, 0);
      },
    },
    {
      name: 'calls run() exactly once and commits the snapshot it returns',
      async run({ tasks, start }) {
        const { task, snapshot } = await start({ kind: 'bash', label: 'npm test', outputLimitBytes: 4096 });
        assert.equal(task.runCalls, 1);
        assert.equal(task.context?.taskId, snapshot.id);
        assert.equal(snapshot.id, 'bash-1');
        assert.deepEqual(
          {
            kind: snapshot.kind,
            label: snapshot.label,
            status: snapshot.status,
            ownerSessionId: snapshot.ownerSessionId,
            outputLimitBytes: snapshot.outputLimitBytes,
            reported: snapshot.reported,
            isBackgrounded: snapshot.isBackgrounded,
            branchGeneration: snapshot.branchGeneration,
            endedAt: snapshot.endedAt,
            attempt: snapshot.attempt,
            cancellable: snapshot.cancellable,
            finalOutput: snapshot.finalOutput,
          },
          {
            kind: 'bash',
            label: 'npm test',
            status: 'running',
            ownerSessionId: undefined,
            outputLimitBytes: 4096,
            reported: false,
            isBackgrounded: true,
            branchGeneration: 0,
            endedAt: undefined,
            attempt: 1,
            cancellable: true,
            finalOutput: false,
          },
        );
        assert.equal(typeof snapshot.startedAt, 'number');
        assert.ok(Object.isFrozen(snapshot), 'the snapshot is frozen');
        assert.deepEqual(
          tasks.list().map((listed) => listed.id),
          [snapshot.id],
        );
      },
    },
    {
      name: 'a run() that throws registers nothing and spends no id',
      async run({ tasks, start }) {
        const refusal = new Error('spawn refused');
        const error = await failure(() =>
          tasks.start({
            kind: 'bash',
            label: 'x',
            run: () => {
              throw refusal;
            },
          }),
        );
        assert.equal(error, refusal, 'the error of run() reaches the caller unchanged');
        assert.deepEqual(tasks.list(), []);
        assert.equal((await start({ kind: 'bash' })).snapshot.id, 'bash-1');
      },
    },
    {
      name: 'refuses hooks that break the contract with PRODUCER_CONTRACT, cancelling what they started',
      async run({ tasks, start }) {
        let cancels = 0;
        const cancel = () => {
          cancels += 1;
        };
        const hooks = { cancel } as unknown as TaskHooks;
        await failsWith(
          () => tasks.start({ kind: 'bash', label: 'x', run: () => hooks }),
          'PRODUCER_CONTRACT',
        );
        assert.equal(cancels, 1);
        await failsWith(
          () => tasks.start({ kind: 'bash', label: 'x', run: () => undefined as unknown as TaskHooks }),
          'PRODUCER_CONTRACT',
        );
        assert.deepEqual(tasks.list(), []);
        assert.equal((await start({ kind: 'bash' })).snapshot.id, 'bash-1');
      },
    },
    {
      name: 'a rejected start spends no id',
      async run({ tasks, producer, start }) {
        await failure(() => tasks.start({ ...producer({ kind: 'bash' }).spec, label: '' }));
        assert.equal((await start({ kind: 'bash' })).snapshot.id, 'bash-1');
      },
    },
    {
      name: 'projects outputLimitBytes unchanged, and leaves it absent when not given',
      async run({ start }) {
        assert.equal((await start({ outputLimitBytes: 123 })).snapshot.outputLimitBytes, 123);
        assert.equal((await start()).snapshot.outputLimitBytes, undefined);
      },
    },
    {
      name: 'stamps the owner branch generation at registration, unless the spec overrides it',
      async run({ tasks, start }) {
        let generation = 3;
        const owner = createOwner('s1', { branchGeneration: () => generation });
        const first = (await start({ owner })).snapshot;
        generation = 4;
        const second = (await start({ owner })).snapshot;
        const third = (await start({ owner, spec: { branchGeneration: 9 } })).snapshot;
        assert.deepEqual(
          [first, second, third].map((snapshot) => snapshot.branchGeneration),
          [3, 4, 9],
        );
        assert.equal(tasks.get(first.id, owner).branchGeneration, 3);
      },
    },
    {
      name: 'keeps detail published during run() and after, merges the outcome detail, ignores detail after settlement',
      async run({ tasks, onCleanup, settled }) {
        let publish: ((patch: CommandFacts) => void) | undefined;
        let finish: (() => void) | undefined;
        const snapshot = await tasks.start<CommandFacts>({
          kind: 'bash',
          label: 'x',
          detail: { command: 'ls' },
          run: (context) => {
            context.updateDetail({ pid: 7 });
            publish = context.updateDetail;
            return {
              cancel() {},
              done: new Promise<TaskOutcome<CommandFacts>>((resolve) => {
                finish = () => resolve({ status: 'completed', detail: { exitCode: 0 } });
              }),
            };
          },
        });
        onCleanup(() => finish?.());
        assert.deepEqual(snapshot.detail, { command: 'ls', pid: 7 });
        publish?.({ outputBytes: 10 });
        assert.deepEqual(tasks.get(snapshot.id).detail, { command: 'ls', pid: 7, outputBytes: 10 });
        finish?.();
        await settled(snapshot.id);
        publish?.({ outputBytes: 99 });
        assert.deepEqual(tasks.get(snapshot.id).detail, {
          command: 'ls',
          pid: 7,
          outputBytes: 10,
          exitCode: 0,
        });
      },
    },
  ],
};
