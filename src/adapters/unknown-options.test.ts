import { MockLanguageModelV4 } from 'ai/test';
import { afterAll, describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createOwner } from '../tasks/index.js';
import { createTaskTools } from '../tools/index.js';
import {
  createAiSdkModel,
  createAiSdkNotificationBridge,
  toAiSdkTool,
  toAiSdkTools,
} from './ai-sdk/index.js';
import { createOpenAiChatModel } from './openai-chat-model.js';

const tasks = createTaskService({ requireController: false });
const owner = createOwner('s');
const taskTools = createTaskTools({ tasks });

afterAll(() => {
  taskTools.dispose();
  tasks.dispose();
});

describe('unknown option keys of the adapters', () => {
  it.each([
    [
      'createOpenAiChatModel',
      () => createOpenAiChatModel({ baseUrl: 'http://127.0.0.1:1/v1', model: 'm', maxToken: 5 } as never),
      'Unknown option `maxToken` for createOpenAiChatModel (did you mean `maxTokens`?)',
    ],
    [
      'createAiSdkModel',
      () => createAiSdkModel(new MockLanguageModelV4(), { retries: 1 } as never),
      'Unknown option `retries` for createAiSdkModel; known options: `name`, `maxRetries`',
    ],
    [
      'createAiSdkNotificationBridge',
      () => createAiSdkNotificationBridge({ tasks, owner, onWakeUp: () => {} } as never),
      'Unknown option `onWakeUp` for createAiSdkNotificationBridge (did you mean `onWakeup`?)',
    ],
    [
      // The bridge supplies the policy's queue itself.
      'createAiSdkNotificationBridge (enqueue)',
      () => createAiSdkNotificationBridge({ tasks, owner, enqueue: () => {} } as never),
      'Unknown option `enqueue` for createAiSdkNotificationBridge',
    ],
    [
      'toAiSdkTools',
      () => toAiSdkTools([], { notification: {} } as never),
      'Unknown option `notification` for toAiSdkTools (did you mean `notifications`?)',
    ],
    [
      'toAiSdkTool',
      () => toAiSdkTool(taskTools.taskOutput, { owner } as never),
      'Unknown option `owner` for toAiSdkTool; known options: `policy`, `caller`, `notifications`',
    ],
  ])('%s rejects an unknown key', (_name, create, message) => {
    expect(create).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(create).toThrow(message);
  });

  it('the bridge hands its own options to nobody else', () => {
    const bridge = createAiSdkNotificationBridge({ tasks, owner, onWakeup: () => {}, onSteer: () => {} });
    bridge.dispose();
  });
});
