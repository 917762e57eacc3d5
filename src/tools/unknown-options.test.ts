import { afterAll, describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { scriptedTask } from '../testing/index.js';
import { createStopDispatch } from './stop-dispatch.js';
import { createTaskTools } from './task-tools.js';

const tasks = createTaskService();

afterAll(() => tasks.dispose());

describe('unknown option keys of the task tools', () => {
  it.each([
    [
      'createTaskTools',
      () => createTaskTools({ tasks, maxWait: 10 } as never),
      'Unknown option `maxWait` for createTaskTools (did you mean `maxWaitMs`?)',
    ],
    [
      'createStopDispatch',
      () => createStopDispatch({ tasks, strategy: {} } as never),
      'Unknown option `strategy` for createStopDispatch (did you mean `strategies`?)',
    ],
  ])('%s rejects an unknown key before attaching anything', async (_name, create, message) => {
    expect(create).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(create).toThrow(message);
    // No controller was attached: a start still finds none.
    await expect(tasks.start(scriptedTask({ kind: 'bash' }).spec)).rejects.toMatchObject({
      code: 'NO_CONTROLLER',
    });
  });
});
