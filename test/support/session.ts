/** Session test helpers: a runtime on the in-memory store with a tool that starts scripted tasks. */
import { z } from 'zod';
import { createSessionRuntime, type Session, type SessionRuntimeOptions } from '../../src/session/index.js';
import { createMemorySessionStore, type SessionStore } from '../../src/store/index.js';
import {
  type ScriptedModel,
  type ScriptedTask,
  scriptedModel,
  scriptedTask,
} from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/index.js';
import { capturingLogger } from './registry.js';

/** Background tasks the model started through `start_task`, by label. */
export type TaskBoard = Map<string, ScriptedTask>;

/** `start_task(label)`: starts a scripted background task owned by the calling session. */
export function startTaskTool(session: Session, board: TaskBoard) {
  return defineTool({
    name: 'start_task',
    description: 'Starts a background task.',
    inputSchema: z.object({ label: z.string() }),
    async execute({ label }, context) {
      const task = scriptedTask({ kind: 'scripted', label, owner: context.caller! });
      board.set(label, task);
      const snapshot = await session.tasks.start(task.spec);
      return {
        text: `started ${snapshot.id}`,
        isError: false,
        value: { kind: 'background', taskId: snapshot.id },
      };
    },
  });
}

export function runtimeForTest(
  steps: Parameters<typeof scriptedModel>[0],
  options: Partial<SessionRuntimeOptions> = {},
) {
  const model: ScriptedModel = scriptedModel(steps);
  const board: TaskBoard = new Map();
  const logger = capturingLogger();
  const store = options.store ?? createMemorySessionStore();
  const runtime = createSessionRuntime({
    store,
    model,
    logger,
    tools: (session) => [startTaskTool(session, board)],
    ...options,
  });
  // The tests collect the tasks themselves (they settle and read them): they are the controller.
  runtime.tasks.attachController('session-tests');
  return { runtime, model, board, store, logger };
}

/** Lets setImmediate-scheduled drains and their turns run. */
export async function settleEventLoop(rounds = 5): Promise<void> {
  for (let round = 0; round < rounds; round += 1) {
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * A store whose named methods throw while they are listed in `failing` (add and delete names to switch a
 * failure on and off); everything else reaches the in-memory store.
 */
export function switchableStore(inner: SessionStore = createMemorySessionStore()) {
  const failing = new Set<keyof SessionStore>();
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (failing.has(property as keyof SessionStore)) {
          throw new Error(`store unavailable (${String(property)})`);
        }
        return Reflect.apply(value, target, args);
      };
    },
  }) as SessionStore;
  return { store, failing };
}
