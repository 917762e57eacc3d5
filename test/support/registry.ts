/** Helpers shared by the registry's tests: a service with a controller attached and a capturing logger. */

import { createTaskService } from '../../src/registry/local-task-service.js';
import type { TaskServiceOptions } from '../../src/registry/options.js';
import type { Logger, TaskService } from '../../src/tasks/index.js';

export interface CapturedWarning {
  readonly message: string;
  readonly context: Record<string, unknown> | undefined;
}

export function capturingLogger(): Logger & { readonly warnings: CapturedWarning[] } {
  const warnings: CapturedWarning[] = [];
  return {
    warnings,
    warn(message, context) {
      warnings.push({ message, context });
    },
  };
}

export function serviceForTest(options: TaskServiceOptions = {}): {
  tasks: TaskService;
  logger: ReturnType<typeof capturingLogger>;
  clock: { now: number };
} {
  const logger = capturingLogger();
  const clock = { now: 1_000 };
  const tasks = createTaskService({ logger, now: () => clock.now, ...options });
  tasks.attachController('test');
  return { tasks, logger, clock };
}

/** Lets pending promise reactions run (settlement is a reaction to `done`). */
export async function flushMicrotasks(rounds = 5): Promise<void> {
  for (let round = 0; round < rounds; round += 1) await Promise.resolve();
}
