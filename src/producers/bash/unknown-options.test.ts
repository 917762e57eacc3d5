import { describe, expect, it } from 'vitest';
import { createBashProducer } from './bash-producer.js';
import { createBashTool } from './bash-tool.js';
import { BashExecutor } from './executor.js';

describe('unknown option keys of the bash producer', () => {
  it.each([
    [
      'BashExecutor',
      () => new BashExecutor({ killGraceMS: 10 } as never),
      'Unknown option `killGraceMS` for BashExecutor (did you mean `killGraceMs`?)',
    ],
    [
      'createBashProducer',
      () => createBashProducer({ tasks: {}, executor: {}, outputLimitByte: 5 } as never),
      'Unknown option `outputLimitByte` for createBashProducer (did you mean `outputLimitBytes`?)',
    ],
    [
      'createBashTool',
      () => createBashTool({ producer: {}, runInBackground: false } as never),
      'Unknown option `runInBackground` for createBashTool; known options: `producer`,',
    ],
  ])('%s rejects an unknown key before doing anything', (_name, create, message) => {
    expect(create).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(create).toThrow(message);
  });

  it('accepts undefined values of known keys', async () => {
    const executor = new BashExecutor({ killGraceMs: undefined, shell: undefined });
    expect(executor.options.killGraceMs).toBe(2000);
    await executor.dispose();
  });
});
