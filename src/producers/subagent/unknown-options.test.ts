import { afterAll, describe, expect, it } from 'vitest';
import { createTaskService } from '../../registry/index.js';
import { createMemorySessionStore } from '../../store/index.js';
import { scriptedModel } from '../../testing/index.js';
import { createAgentMessageTool } from './agent-message-tool.js';
import { createAgentTool } from './agent-tool.js';
import { createSubagentProducer } from './subagent-producer.js';
import { createSubagentStopStrategy } from './subagent-stop-strategy.js';

const tasks = createTaskService();
const store = createMemorySessionStore();
const base = { tasks, store, model: scriptedModel() };

afterAll(() => tasks.dispose());

describe('unknown option keys of the subagent producer', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['maxDepht', { maxDepht: 2 }, '(did you mean `maxDepth`?)'],
    ['bashTool.timeoutMs', { bashTool: { timeoutMs: 5 } }, '(did you mean `bashTool.maxTimeoutMs`?)'],
    // The children's bash tool always gets the producer's cap.
    ['bashTool.backgroundRuntimeCapMs', { bashTool: { backgroundRuntimeCapMs: 5 } }, 'known options:'],
    ['limits.maxStep', { limits: { maxStep: 5 } }, 'known options: `limits.maxStepsPerTurn`'],
    [
      'notifications.wakeBudjet',
      { notifications: { wakeBudjet: 1 } },
      '(did you mean `notifications.wakeBudget`?)',
    ],
    ['profiles[0].prompt', { profiles: [{ name: 'p', prompt: 'x' }] }, 'known options: `profiles[0].name`'],
  ])('createSubagentProducer rejects %s', (field, options, hint) => {
    const create = () => createSubagentProducer({ ...base, ...options } as never);
    expect(create).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_OPTION', context: expect.objectContaining({ field }) }),
    );
    expect(create).toThrow(`Unknown option \`${field}\` for createSubagentProducer`);
    expect(create).toThrow(hint);
    expect(store.listSessions()).toEqual([]);
  });

  it.each([
    [
      'createAgentTool',
      () => createAgentTool({ producer: {}, autoBackgroundAfterMs: 5 } as never),
      'Unknown option `autoBackgroundAfterMs` for createAgentTool',
    ],
    [
      'createAgentMessageTool',
      () => createAgentMessageTool({ producer: {}, nmae: 'x' } as never),
      'Unknown option `nmae` for createAgentMessageTool (did you mean `name`?)',
    ],
    [
      'createSubagentStopStrategy',
      () => createSubagentStopStrategy({ policyOf: undefined, stopSettleMs: 0, settleMs: 1 } as never),
      'Unknown option `settleMs` for createSubagentStopStrategy',
    ],
  ])('%s rejects an unknown key', (_name, create, message) => {
    expect(create).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(create).toThrow(message);
  });
});
