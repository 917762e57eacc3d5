import { afterEach, describe, expect, it } from 'vitest';
import { createTaskService } from '../../registry/index.js';
import type { PtyProducerOptions } from './options.js';
import { createPtyProducer, type PtyProducer } from './pty-producer.js';

let cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A producer whose node-pty never loads: a request that passes validation fails with PTY_UNAVAILABLE. */
function withoutNodePty(options: Omit<PtyProducerOptions, 'tasks' | 'loadPty'> = {}): PtyProducer {
  const tasks = createTaskService();
  const producer = createPtyProducer({
    tasks,
    loadPty: async () => {
      throw new Error("Cannot find package 'node-pty'");
    },
    ...options,
  });
  cleanups.push(
    () => tasks.dispose(),
    () => producer.dispose(),
  );
  return producer;
}

describe('createPtyProducer', () => {
  it.each([
    [undefined, 'Expected `tasks` to be a TaskService, got undefined'],
    [{}, 'Expected `tasks` to be a TaskService, got undefined'],
    [{ tasks: 'tasks' }, 'Expected `tasks` to be a TaskService, got "tasks" (string)'],
  ])('refuses %o without a task service, naming the field', (options, message) => {
    expect(() => createPtyProducer(options as never)).toThrow(message);
    expect(() => createPtyProducer(options as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', fault: 'caller' }),
    );
  });
});

describe('unknown options', () => {
  it.each([
    ['maxRuntimeMs', 'Unknown option `maxRuntimeMs` for createPtyProducer (did you mean `runtimeCapMs`?)'],
    [
      'terminateGraceMs',
      'Unknown option `terminateGraceMs` for createPtyProducer (did you mean `killGraceMs`?)',
    ],
    [
      'maxScreenByte',
      'Unknown option `maxScreenByte` for createPtyProducer (did you mean `maxScreenBytes`?)',
    ],
  ])('rejects %s, suggesting the option it means', (key, message) => {
    const tasks = createTaskService();
    cleanups.push(() => tasks.dispose());
    const create = () => createPtyProducer({ tasks, [key]: 1000 } as never);
    expect(create).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(create).toThrow(message);
  });

  it('checks the keys before the task service', () => {
    expect(() => createPtyProducer({ task: {} } as never)).toThrow(
      'Unknown option `task` for createPtyProducer (did you mean `tasks`?)',
    );
  });

  it('accepts undefined values of known options', () => {
    expect(withoutNodePty({ runtimeCapMs: undefined, killGraceMs: undefined }).options.killGraceMs).toBe(
      2000,
    );
  });
});

describe('maxCommandBytes', () => {
  it.each([
    [undefined, 100_000],
    [10, 10],
  ])('with %o, accepts a command of %i bytes and refuses a longer one', async (option, limit) => {
    const producer = withoutNodePty(option === undefined ? {} : { maxCommandBytes: option });
    expect(producer.options.maxCommandBytes).toBe(limit);
    await expect(producer.start({ command: 'x'.repeat(limit) })).rejects.toMatchObject({
      code: 'PTY_UNAVAILABLE',
    });
    const refused = producer.start({ command: 'x'.repeat(limit + 1) });
    await expect(refused).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', fault: 'caller' });
    await expect(refused).rejects.toThrow(
      `Expected \`command\` to be a non-empty string of at most maxCommandBytes (${limit}) UTF-8 bytes without NUL`,
    );
  });

  it('counts UTF-8 bytes, not characters: the kernel limits an argument in bytes', async () => {
    const producer = withoutNodePty({ maxCommandBytes: 10 });
    // Five characters, eleven bytes.
    await expect(producer.start({ command: 'éééé€' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(producer.start({ command: 'ééé' })).rejects.toMatchObject({ code: 'PTY_UNAVAILABLE' });
  });
});
