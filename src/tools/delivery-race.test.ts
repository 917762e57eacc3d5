/**
 * Exactly one delivery: whatever order reads, waits, the model's kill, a person's stop and settlement
 * happen in, a finished task's result is claimed once, and the notification goes out exactly when
 * nobody took the result at settlement and the model did not stop it itself.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import { createDeliveryPolicy, type TaskNotification } from '../notifications/index.js';
import { createOwner, type TaskSnapshot } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { createTaskTools } from './index.js';
import { executeTool } from './tool-definition.js';

type Operation = 'read' | 'wait' | 'modelKill' | 'userStop' | 'settle' | 'push';

describe('delivery across races', () => {
  it('claims once and notifies exactly when nobody else took the result (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            operation: fc.constantFrom<Operation>('read', 'wait', 'modelKill', 'userStop', 'settle', 'push'),
            flushes: fc.nat(4),
          }),
          { maxLength: 8 },
        ),
        fc.boolean(),
        async (steps, streaming) => {
          const { tasks } = serviceForTest();
          const tools = createTaskTools({ tasks });
          const owner = createOwner('session-1');
          const notifications: TaskNotification[] = [];
          const policy = createDeliveryPolicy({
            tasks,
            owner,
            enqueue: (notification) => void notifications.push(notification),
          });
          const task = scriptedTask({ kind: streaming ? 'bash' : 'agent', owner, streaming });
          const { id } = await tasks.start(task.spec);
          let claims = 0;
          tasks.onTasksChanged(
            (change) => {
              if (change.reason === 'claimed') claims += 1;
              // A live waiter's claim is part of the settlement itself.
              if (change.reason === 'settled' && change.task.reported) claims += 1;
              if (change.reason === 'unclaimed') claims -= 1;
            },
            { caller: owner },
          );
          let atSettlement: TaskSnapshot | undefined;
          tasks.onTaskDone((snapshot) => {
            atSettlement = snapshot;
          });
          const context = { caller: owner, toolCallId: 'call', signal: new AbortController().signal };
          const pending: Promise<unknown>[] = [];
          let settled = false;
          for (const { operation, flushes } of steps) {
            switch (operation) {
              case 'read':
                pending.push(executeTool(tools.taskOutput, { task_id: id }, context));
                break;
              case 'wait':
                pending.push(
                  executeTool(tools.taskOutput, { task_id: id, wait: true, timeout_ms: 60_000 }, context),
                );
                break;
              case 'modelKill':
                pending.push(executeTool(tools.taskKill, { task_id: id }, context));
                break;
              case 'userStop':
                pending.push(tools.stop.stopBackgroundTask(id, { initiator: 'user', caller: owner }));
                break;
              case 'settle':
                settled = true;
                task.settle({ status: 'completed', output: 'result' });
                break;
              case 'push':
                task.push('x');
                break;
            }
            await flushMicrotasks(flushes);
          }
          if (!settled) task.settle({ status: 'completed', output: 'result' });
          await Promise.all(pending);
          await flushMicrotasks(10);

          expect(atSettlement).toBeDefined();
          const final = tasks.get(id, owner);
          expect(final.reported).toBe(true);
          expect(claims).toBe(1);
          const expected = atSettlement?.reported === false && atSettlement.stopInitiator !== 'model' ? 1 : 0;
          expect(notifications).toHaveLength(expected);
          if (final.stopInitiator === 'model') expect(notifications).toHaveLength(0);
          policy.dispose();
          tools.dispose();
        },
      ),
      { numRuns: 300 },
    );
  });
});
