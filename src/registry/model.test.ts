/**
 * Model-based test: random interleavings of start / read / wait / abort / kill / settle / owner disposal /
 * service disposal, with the registry's invariants checked after every step.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { capturingLogger, flushMicrotasks } from '../../test/support/registry.js';
import { createOwner, createTrustedCaller, type Owner, type TaskSnapshot } from '../tasks/index.js';
import { type CancelBehavior, type ScriptedTask, scriptedTask } from '../testing/index.js';
import { createTaskService } from './local-task-service.js';

const SESSIONS = ['s0', 's1', 's2'] as const;
const trusted = createTrustedCaller('model-test');

interface TrackedTask {
  readonly id: string;
  readonly sessionIndex: number;
  readonly owner: Owner;
  readonly producer: ScriptedTask;
  /** Terminal snapshots seen by onTaskDone for this task. */
  doneCount: number;
  /** Notifications that won the claim. */
  notified: number;
  /** Waits that resolved with a terminal snapshot. */
  waiterReceived: number;
  settledByProducer: boolean;
  /** Live when its owner's or the service's disposal began: that teardown ends it and takes its claim. */
  tornDown: boolean;
  /** Completion listener calls after the service's disposal began (there must be none). */
  toldDuringDisposal: number;
}

interface World {
  tasks: ReturnType<typeof createTaskService>;
  owners: Owner[];
  ownerDisposed: boolean[];
  ownerDisposalDone: boolean[];
  serviceDisposed: boolean;
  tracked: TrackedTask[];
  waits: Array<{ task: TrackedTask; controller: AbortController; settled: boolean }>;
  pending: Promise<unknown>[];
}

type Command = (world: World) => Promise<void>;

const startCommand = (sessionIndex: number, onCancel: CancelBehavior, streaming: boolean): Command => {
  const command: Command = async (world) => {
    if (world.serviceDisposed || world.ownerDisposed[sessionIndex]) return;
    const owner = world.owners[sessionIndex]!;
    const producer = scriptedTask({ owner, onCancel, streaming });
    let snapshot: TaskSnapshot;
    try {
      snapshot = await world.tasks.start(producer.spec);
    } catch (error) {
      expect((error as { code: string }).code).toBe('ADMISSION_LIMIT');
      expect(producer.runCalls).toBe(0);
      return;
    }
    world.tracked.push({
      id: snapshot.id,
      sessionIndex,
      owner,
      producer,
      doneCount: 0,
      notified: 0,
      waiterReceived: 0,
      settledByProducer: false,
      tornDown: false,
      toldDuringDisposal: 0,
    });
  };
  command.toString = () => `start(${SESSIONS[sessionIndex]}, ${onCancel}, ${streaming ? 'stream' : 'final'})`;
  return command;
};

function pick(world: World, index: number): TrackedTask | undefined {
  if (world.tracked.length === 0) return undefined;
  return world.tracked[index % world.tracked.length];
}

/** Whether the registry still counts the task live (a forgotten task is not). */
function isLive(world: World, task: TrackedTask): boolean {
  try {
    const status = world.tasks.get(task.id, trusted).status;
    return status === 'running' || status === 'stopping';
  } catch {
    return false;
  }
}

function ignoreNotFound(error: unknown): void {
  // Forgotten tasks (owner disposal removes them) answer TASK_NOT_FOUND; everything else is a failure.
  expect((error as { code?: string }).code).toBe('TASK_NOT_FOUND');
}

const readCommand = (index: number): Command => {
  const command: Command = async (world) => {
    const task = pick(world, index);
    if (!task) return;
    await world.tasks.read(task.id, task.owner).catch(ignoreNotFound);
  };
  command.toString = () => `read(#${index})`;
  return command;
};

const waitCommand = (index: number): Command => {
  const command: Command = async (world) => {
    const task = pick(world, index);
    if (!task) return;
    const controller = new AbortController();
    const entry = { task, controller, settled: false };
    // Only a waiter registered while the task was live competes with the notification; a wait on a
    // finished task is a re-read of a result that was already delivered or claimed.
    let registeredLive = false;
    try {
      const status = world.tasks.get(task.id, task.owner).status;
      registeredLive = status === 'running' || status === 'stopping';
    } catch (error) {
      ignoreNotFound(error);
    }
    world.waits.push(entry);
    world.pending.push(
      world.tasks.wait(task.id, 1_000_000, task.owner, controller.signal).then(
        (snapshot) => {
          entry.settled = true;
          if (registeredLive && snapshot.status !== 'running' && snapshot.status !== 'stopping') {
            task.waiterReceived += 1;
          }
        },
        (error: { code?: string }) => {
          entry.settled = true;
          expect(['WAIT_ABORTED', 'TASK_NOT_FOUND']).toContain(error.code);
        },
      ),
    );
  };
  command.toString = () => `wait(#${index})`;
  return command;
};

const abortWaitCommand = (index: number): Command => {
  const command: Command = async (world) => {
    const open = world.waits.filter((entry) => !entry.settled);
    if (open.length === 0) return;
    open[index % open.length]!.controller.abort();
  };
  command.toString = () => `abortWait(#${index})`;
  return command;
};

const killCommand = (index: number): Command => {
  const command: Command = async (world) => {
    const task = pick(world, index);
    if (!task) return;
    await world.tasks.kill(task.id, task.owner).catch((error: { code?: string }) => {
      expect(['TASK_NOT_FOUND', 'CANCEL_FAILED']).toContain(error.code);
    });
  };
  command.toString = () => `kill(#${index})`;
  return command;
};

const settleCommand = (index: number, status: 'completed' | 'failed' | 'killed'): Command => {
  const command: Command = async (world) => {
    const task = pick(world, index);
    if (!task) return;
    task.producer.push('output\n');
    task.producer.settle({ status, output: 'final' });
    task.settledByProducer = true;
  };
  command.toString = () => `settle(#${index}, ${status})`;
  return command;
};

const disposeOwnerCommand = (sessionIndex: number): Command => {
  const command: Command = async (world) => {
    if (world.ownerDisposed[sessionIndex]) return;
    world.ownerDisposed[sessionIndex] = true;
    const owner = world.owners[sessionIndex]!;
    // The owner's cleanup cancels, within dispose(), what is live right now.
    for (const task of world.tracked) if (task.owner === owner && isLive(world, task)) task.tornDown = true;
    // Settle stuck producers so disposal can finish, as a compliant-but-slow producer eventually would.
    for (const task of world.tracked) {
      if (task.owner === owner && !task.settledByProducer) {
        queueMicrotask(() => task.producer.settle({ status: 'killed' }));
        task.settledByProducer = true;
      }
    }
    world.pending.push(
      owner.dispose().then(() => {
        world.ownerDisposalDone[sessionIndex] = true;
        // No live task of this owner after its disposal resolved, and no snapshot left.
        if (!world.serviceDisposed) expect(world.tasks.list(owner)).toEqual([]);
        for (const snapshot of world.tasks.list(owner))
          expect(['running', 'stopping']).not.toContain(snapshot.status);
      }),
    );
  };
  command.toString = () => `disposeOwner(${SESSIONS[sessionIndex]})`;
  return command;
};

const disposeServiceCommand: Command = async (world) => {
  if (world.serviceDisposed) return;
  world.serviceDisposed = true;
  for (const task of world.tracked) if (isLive(world, task)) task.tornDown = true;
  for (const task of world.tracked) {
    if (!task.settledByProducer) {
      queueMicrotask(() => task.producer.settle({ status: 'killed' }));
      task.settledByProducer = true;
    }
  }
  world.pending.push(world.tasks.dispose());
};
disposeServiceCommand.toString = () => 'disposeService()';

const flushCommand: Command = async () => {
  await flushMicrotasks(10);
};
flushCommand.toString = () => 'flush()';

function checkInvariants(world: World): void {
  for (const task of world.tracked) {
    // Exactly one terminal outcome per task: onTaskDone fires at most once.
    expect(task.doneCount, `${task.id} done count`).toBeLessThanOrEqual(1);
    // Never two deliveries: a waiter that got the result excludes a notification.
    expect(task.notified, `${task.id} notifications`).toBeLessThanOrEqual(1);
    // A teardown took the end: nobody is left to tell.
    if (task.tornDown) expect(task.notified, `${task.id} notified after its teardown`).toBe(0);
    expect(task.toldDuringDisposal, `${task.id} told while the service was disposed`).toBe(0);
    if (task.waiterReceived > 0) expect(task.notified, `${task.id} notified after a waiter`).toBe(0);
    // A settled task that was not notified was claimed by a live waiter at settlement.
    if (task.doneCount === 1 && task.notified === 0) {
      try {
        expect(world.tasks.get(task.id, trusted).reported, `${task.id} neither notified nor claimed`).toBe(
          true,
        );
      } catch (error) {
        ignoreNotFound(error);
      }
    }
  }
  // Snapshots are visible only to their owner's session.
  for (const [index, owner] of world.owners.entries()) {
    for (const snapshot of world.tasks.list(owner)) expect(snapshot.ownerSessionId).toBe(SESSIONS[index]);
  }
  for (const snapshot of world.tasks.list(trusted)) {
    const sessionIndex = SESSIONS.indexOf(snapshot.ownerSessionId as (typeof SESSIONS)[number]);
    // A disposed service has detached from owners; its records stay readable for the host.
    if (world.ownerDisposalDone[sessionIndex] && !world.serviceDisposed)
      expect.unreachable(`${snapshot.id} survived its owner's disposal`);
  }
}

const commandArbitrary = fc.oneof(
  fc
    .tuple(
      fc.integer({ min: 0, max: 2 }),
      fc.constantFrom<CancelBehavior>('settle', 'settle', 'ignore', 'throw'),
      fc.boolean(),
    )
    .map(([session, onCancel, streaming]) => startCommand(session, onCancel, streaming)),
  fc.nat().map(readCommand),
  fc.nat().map(waitCommand),
  fc.nat().map(abortWaitCommand),
  fc.nat().map(killCommand),
  fc
    .tuple(fc.nat(), fc.constantFrom<'completed' | 'failed' | 'killed'>('completed', 'failed', 'killed'))
    .map(([index, status]) => settleCommand(index, status)),
  fc.integer({ min: 0, max: 2 }).map(disposeOwnerCommand),
  fc.constant(disposeServiceCommand),
  fc.constant(flushCommand),
);

describe('registry model', () => {
  it('keeps its invariants under random interleavings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(commandArbitrary, { minLength: 1, maxLength: 40 }), async (commands) => {
        const tasks = createTaskService({ logger: capturingLogger(), maxLiveTasksPerOwner: 4 });
        tasks.attachController('model');
        const world: World = {
          tasks,
          owners: SESSIONS.map((session) => createOwner(session)),
          ownerDisposed: SESSIONS.map(() => false),
          ownerDisposalDone: SESSIONS.map(() => false),
          serviceDisposed: false,
          tracked: [],
          waits: [],
          pending: [],
        };
        tasks.onTaskDone((snapshot) => {
          const task = world.tracked.find((candidate) => candidate.id === snapshot.id);
          if (!task) return;
          task.doneCount += 1;
          if (world.serviceDisposed) task.toldDuringDisposal += 1;
          if (tasks.claim(snapshot.id, trusted)) task.notified += 1;
        });
        for (const command of commands) {
          await command(world);
          checkInvariants(world);
        }
        // Let everything finish, then check once more.
        for (const task of world.tracked) task.producer.settle({ status: 'completed' });
        for (const entry of world.waits) entry.controller.abort();
        // Their ends are processed before the service goes: what is still live now is torn down.
        await flushMicrotasks(10);
        await disposeServiceCommand(world);
        await Promise.all(world.pending);
        await flushMicrotasks(10);
        checkInvariants(world);
        for (const task of world.tracked) {
          if (task.tornDown) {
            // An owner's teardown still tells its listeners (the end is reported); the service's tells none.
            expect(task.doneCount, `${task.id} told more than once`).toBeLessThanOrEqual(1);
            continue;
          }
          expect(task.doneCount, `${task.id} settled`).toBe(1);
          // Exactly one delivery: the notification, or a waiter that held the result at settlement.
          if (task.waiterReceived === 0) expect(task.notified, `${task.id} lost`).toBe(1);
        }
      }),
      { numRuns: 300 },
    );
  });
});
