import { describe, expect, it } from 'vitest';
import { createPtyProducer } from './pty-producer.js';

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
