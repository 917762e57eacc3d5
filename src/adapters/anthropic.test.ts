import { describe, expect, it } from 'vitest';
import { serviceForTest } from '../../test/support/registry.js';
import { createTaskTools } from '../tools/index.js';
import { executeAnthropicToolUse, toAnthropicTool } from './index.js';

describe('Anthropic adapter', () => {
  it('shapes a definition as a Messages API tool with input_schema', () => {
    const { tasks } = serviceForTest();
    const { taskKill } = createTaskTools({ tasks });
    expect(toAnthropicTool(taskKill)).toEqual({
      name: 'task_kill',
      description: taskKill.description,
      input_schema: taskKill.jsonSchema,
    });
    expect(toAnthropicTool(taskKill).input_schema.type).toBe('object');
  });

  it('answers a tool_use block with a tool_result block, flagging errors', async () => {
    const { tasks } = serviceForTest();
    const { tools } = createTaskTools({ tasks });
    const context = { caller: undefined, signal: new AbortController().signal };
    expect(
      await executeAnthropicToolUse(tools, { id: 'toolu_1', name: 'task_list', input: {} }, context),
    ).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_1',
      content: '(no background tasks)',
    });
    expect(
      await executeAnthropicToolUse(
        tools,
        { id: 'toolu_2', name: 'task_kill', input: { task_id: 'bash-1' } },
        context,
      ),
    ).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_2',
      content:
        'Error [TASK_NOT_FOUND]: No task with id "bash-1". Check the id; task_list shows the tasks you can use.',
      is_error: true,
    });
  });
});
