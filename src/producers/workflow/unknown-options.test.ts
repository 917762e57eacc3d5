import { afterAll, describe, expect, it } from 'vitest';
import { createTaskService } from '../../registry/index.js';
import { createMemorySessionStore } from '../../store/index.js';
import { createWorkflowProducer } from './workflow-producer.js';
import { createWorkflowTools } from './workflow-tools.js';

const tasks = createTaskService();
const store = createMemorySessionStore();

afterAll(() => tasks.dispose());

describe('unknown option keys of the workflow producer', () => {
  it.each([
    [
      'createWorkflowProducer',
      () => createWorkflowProducer({ tasks, store, directroy: '/tmp' } as never),
      'Unknown option `directroy` for createWorkflowProducer (did you mean `directory`?)',
    ],
    [
      'createWorkflowTools',
      () => createWorkflowTools({ producer: {}, directory: '/tmp' } as never),
      'Unknown option `directory` for createWorkflowTools; known options: `producer`',
    ],
  ])('%s rejects an unknown key', (_name, create, message) => {
    expect(create).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(create).toThrow(message);
  });
});
