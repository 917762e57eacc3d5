/**
 * Task ids from store-reserved blocks never repeat, whatever the interleaving of task services starting
 * tasks, ending and appearing on one store (property), with blocks small enough to cross often.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createMemorySessionStore } from '../store/index.js';
import type { TaskService } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { lastSequences, storeSequenceBlocks } from './store-sequence-blocks.js';

type Step =
  | { readonly op: 'start'; readonly service: number; readonly kind: 'bash' | 'agent' }
  | {
      readonly op: 'end' | 'open';
      readonly service: number;
    };

describe('task ids from reserved blocks', () => {
  it('never repeat across services on one store (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({
              op: fc.constant('start' as const),
              service: fc.nat(3),
              kind: fc.constantFrom('bash' as const, 'agent' as const),
            }),
            fc.record({ op: fc.constantFrom('end' as const, 'open' as const), service: fc.nat(3) }),
          ),
          { maxLength: 60 },
        ),
        fc.integer({ min: 1, max: 4 }),
        async (steps: Step[], blockSize) => {
          const store = createMemorySessionStore();
          const open = (): TaskService => {
            const tasks = createTaskService({
              initialSequences: lastSequences(store),
              sequenceBlocks: storeSequenceBlocks(store, blockSize),
              requireController: false,
            });
            return tasks;
          };
          const services: Array<TaskService | undefined> = [open(), open(), open(), open()];
          const ids: string[] = [];
          for (const step of steps) {
            const service = services[step.service];
            if (step.op === 'start') {
              if (service === undefined) continue;
              const { id } = await service.start(scriptedTask({ kind: step.kind }).spec);
              ids.push(id);
            } else if (step.op === 'end') {
              await service?.dispose();
              services[step.service] = undefined;
            } else if (service === undefined) {
              services[step.service] = open();
            }
          }
          expect(new Set(ids).size).toBe(ids.length);
          await Promise.all(services.map((service) => service?.dispose()));
        },
      ),
      { numRuns: 150 },
    );
  });
});
