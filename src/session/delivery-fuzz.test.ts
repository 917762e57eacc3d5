/**
 * Exactly once, across a session's own paths: whatever order task ends, idle drains, turns with mid-turn
 * injection, a person's input, rewinds, interrupts, surface takes and reservations, and a store that fails
 * to record deliveries happen in, every notification the session admitted ends delivered or discarded,
 * and no task's end reaches the conversation twice.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { capturingLogger } from '../../test/support/registry.js';
import { switchableStore } from '../../test/support/session.js';
import { type ScriptedTask, scriptedTask } from '../testing/index.js';
import { defineTool } from '../tools/index.js';
import type { ModelPort } from './model-port.js';
import type { NotificationReservation } from './notification-inbox.js';
import { createSessionRuntime } from './session-runtime.js';

afterEach(() => {
  vi.useRealTimers();
});

type Operation =
  | { readonly kind: 'settle'; readonly task: number }
  | { readonly kind: 'rewind' }
  | { readonly kind: 'send' }
  | { readonly kind: 'interrupt' }
  | { readonly kind: 'take' }
  | { readonly kind: 'reserve' }
  | { readonly kind: 'commit' }
  | { readonly kind: 'release' }
  | { readonly kind: 'storeFails'; readonly on: boolean }
  | { readonly kind: 'advance'; readonly ms: number };

const TASKS = 5;

const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ kind: fc.constant('settle' as const), task: fc.nat(TASKS - 1) }),
  fc.constant({ kind: 'rewind' as const }),
  fc.constant({ kind: 'send' as const }),
  fc.constant({ kind: 'interrupt' as const }),
  fc.constant({ kind: 'take' as const }),
  fc.constant({ kind: 'reserve' as const }),
  fc.constant({ kind: 'commit' as const }),
  fc.constant({ kind: 'release' as const }),
  fc.record({ kind: fc.constant('storeFails' as const), on: fc.boolean() }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 50 }) }),
);

describe('session delivery across races', () => {
  it('every admitted notification ends delivered or discarded, and none reaches the conversation twice (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(operation, { maxLength: 25 }),
        fc.array(fc.boolean(), { minLength: TASKS, maxLength: TASKS }),
        async (operations, quiet) => {
          vi.useFakeTimers();
          const { store, failing } = switchableStore();
          let requests = 0;
          const model: ModelPort = {
            name: 'alternating',
            async generate() {
              requests += 1;
              // Every other request calls a tool, so later notifications are injected mid-turn.
              return requests % 2 === 1
                ? {
                    text: '',
                    toolCalls: [{ id: `call_${requests}`, name: 'noop', input: {} }],
                    finishReason: 'tool_calls',
                  }
                : { text: 'ok', toolCalls: [], finishReason: 'stop' };
            },
          };
          const runtime = createSessionRuntime({
            store,
            model,
            logger: capturingLogger(),
            limits: { deliveryRetryMs: 5, deliveryRetryMaxMs: 20 },
            tools: () => [
              defineTool({
                name: 'noop',
                description: 'Does nothing for a moment.',
                inputSchema: z.object({}),
                async execute() {
                  await new Promise((resolve) => setTimeout(resolve, 3));
                  return { text: 'done', isError: false };
                },
              }),
            ],
          });
          // The property settles and reads the tasks itself: it is their controller.
          runtime.tasks.attachController('delivery-fuzz');
          const session = runtime.createSession({ id: 's1' });
          const tasks: ScriptedTask[] = [];
          for (let index = 0; index < TASKS; index += 1) {
            const task = scriptedTask({
              kind: 'scripted',
              label: `t${index}`,
              owner: session.owner,
              spec: { detail: { notificationLane: quiet[index] ? 'quiet' : 'wakeup' } },
            });
            await session.tasks.start(task.spec);
            tasks.push(task);
          }
          const reservations: NotificationReservation[] = [];
          const settledTasks = new Set<number>();
          for (const step of operations) {
            switch (step.kind) {
              case 'settle':
                if (!settledTasks.has(step.task)) {
                  settledTasks.add(step.task);
                  tasks[step.task]!.settle();
                }
                break;
              case 'rewind':
                try {
                  session.rewind(0);
                } catch {
                  // Busy, or the store failed.
                }
                break;
              case 'send':
                void session.send('hello').catch(() => undefined);
                break;
              case 'interrupt':
                session.interrupt();
                break;
              case 'take':
                try {
                  session.takeQueuedNotifications({ source: 'surface' });
                } catch {
                  // The store failed: they stay queued.
                }
                break;
              case 'reserve':
                try {
                  reservations.push(session.reserveQueuedNotifications({ source: 'surface' }));
                } catch {
                  // The store failed: they stay queued.
                }
                break;
              case 'commit':
                try {
                  reservations[0]?.commit();
                  reservations.shift();
                } catch {
                  // Stays reserved (and held): committed again or released later.
                }
                break;
              case 'release':
                reservations.shift()?.release();
                break;
              case 'storeFails':
                if (step.on) failing.add('commitDelivery');
                else failing.delete('commitDelivery');
                break;
              case 'advance':
                await vi.advanceTimersByTimeAsync(step.ms);
                break;
            }
          }
          failing.clear();
          for (const reservation of reservations) reservation.release();
          for (const task of tasks) task.settle();
          await vi.advanceTimersByTimeAsync(200);
          await session.whenIdle();
          await vi.advanceTimersByTimeAsync(200);
          const closing = session.close();
          await vi.advanceTimersByTimeAsync(200);
          await closing;

          const ledger = store.listLedger('s1').filter((entry) => entry.kind === 'notification');
          expect(ledger.filter((entry) => entry.state === 'queued')).toEqual([]);
          const messages = store.listMessages('s1', { includeAbandoned: true });
          for (let index = 1; index <= TASKS; index += 1) {
            const tag = `<task-id>scripted-${index}</task-id>`;
            const carrying = messages.filter((message) => (message.content.text ?? '').includes(tag));
            expect(carrying.length, `scripted-${index}`).toBeLessThanOrEqual(1);
            const entries = ledger.filter((entry) => entry.taskId === `scripted-${index}`);
            expect(entries.length).toBeLessThanOrEqual(1);
            for (const entry of entries) {
              // The session drained before it closed: only quiet ones may still wait, and stale ones go.
              if (entry.lane === 'wakeup' && entry.state === 'discarded')
                expect(entry.reason).toBe('branch_changed');
              if (entry.state === 'delivered') {
                expect(carrying.map((message) => message.seq)).toEqual([entry.deliveredInMessageSeq]);
              } else {
                expect(carrying).toEqual([]);
              }
            }
          }
          await runtime.dispose();
          vi.useRealTimers();
        },
      ),
      { numRuns: 150 },
    );
  });
});
