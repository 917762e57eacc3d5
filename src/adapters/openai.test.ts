import { describe, expect, it } from 'vitest';
import { serviceForTest } from '../../test/support/registry.js';
import { createOwner } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { createTaskTools } from '../tools/index.js';
import {
  executeOpenAIToolCall,
  restoreOptionalNulls,
  toOpenAIChatTool,
  toOpenAIChatToolMessage,
  toOpenAIFunctionCallOutput,
  toOpenAIResponsesTool,
  toStrictJsonSchema,
} from './index.js';

function tools() {
  const { tasks } = serviceForTest();
  return { tasks, ...createTaskTools({ tasks }) };
}

describe('OpenAI adapter', () => {
  it('makes strict-mode schemas: all required, optional ones nullable, no extra properties', () => {
    expect(toOpenAIChatTool(tools().taskOutput)).toEqual({
      type: 'function',
      function: {
        name: 'task_output',
        description: expect.stringMatching(/^Read the output of a background task\./),
        strict: true,
        parameters: {
          type: 'object',
          properties: {
            task_id: { type: 'string', description: 'The id of a background task, for example "bash-3".' },
            wait: {
              type: ['boolean', 'null'],
              description: 'Wait for the task to end before answering. Default false: answer at once.',
            },
            timeout_ms: {
              type: ['number', 'null'],
              description: expect.stringMatching(/^How long to wait/),
            },
            tail_bytes: {
              type: ['integer', 'null'],
              description: expect.stringMatching(/^Show only the newest/),
            },
            wait_for: expect.objectContaining({
              type: ['object', 'null'],
              additionalProperties: false,
              required: ['pattern', 'ignore_case', 'port', 'host', 'url', 'status'],
            }),
            tail_lines: {
              type: ['integer', 'null'],
              description: expect.stringMatching(/^Show only the last/),
            },
          },
          required: ['task_id', 'wait', 'timeout_ms', 'wait_for', 'tail_bytes', 'tail_lines'],
          additionalProperties: false,
        },
      },
    });
    expect(toOpenAIResponsesTool(tools().taskList)).toEqual({
      type: 'function',
      name: 'task_list',
      description: expect.any(String),
      strict: true,
      parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
    });
  });

  it('converts nested objects, arrays, enums and unions, dropping keywords strict mode rejects', () => {
    expect(
      toStrictJsonSchema({
        type: 'object',
        properties: {
          mode: { type: 'string', enum: ['a', 'b'], default: 'a' },
          tags: {
            type: 'array',
            items: { type: 'object', properties: { name: { type: 'string', minLength: 1 } } },
          },
          either: { oneOf: [{ type: 'string' }, { type: 'number' }] },
        },
        required: ['tags'],
      }),
    ).toEqual({
      type: 'object',
      properties: {
        mode: { type: ['string', 'null'], enum: ['a', 'b', null] },
        tags: {
          type: 'array',
          items: {
            type: 'object',
            properties: { name: { type: ['string', 'null'] } },
            required: ['name'],
            additionalProperties: false,
          },
        },
        either: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'null' }] },
      },
      required: ['mode', 'tags', 'either'],
      additionalProperties: false,
    });
  });

  it('turns nulls for optional properties back into absent ones, and keeps required nulls', () => {
    const schema = {
      type: 'object',
      properties: {
        id: { type: 'string' },
        wait: { type: 'boolean' },
        items: { type: 'array', items: { type: 'object', properties: { note: { type: 'string' } } } },
      },
      required: ['id'],
    };
    expect(
      restoreOptionalNulls(schema, { id: null, wait: null, items: [{ note: null }, { note: 'x' }] }),
    ).toEqual({
      id: null,
      items: [{}, { note: 'x' }],
    });
  });

  it('executes a strict-mode call whose optional arguments are null', async () => {
    const set = tools();
    const owner = createOwner('s1');
    const task = scriptedTask({ owner });
    const { id } = await set.tasks.start(task.spec);
    task.push('hello\n');
    const context = { caller: owner, toolCallId: 'call_1', signal: new AbortController().signal };
    const result = await executeOpenAIToolCall(
      set.tools,
      {
        name: 'task_output',
        arguments: JSON.stringify({
          task_id: id,
          wait: null,
          timeout_ms: null,
          tail_bytes: null,
          tail_lines: null,
        }),
      },
      context,
    );
    expect(result.text).toBe('hello\n[status: running]');
    expect(toOpenAIChatToolMessage('call_1', result)).toEqual({
      role: 'tool',
      tool_call_id: 'call_1',
      content: 'hello\n[status: running]',
    });
    expect(toOpenAIFunctionCallOutput('call_1', result)).toEqual({
      type: 'function_call_output',
      call_id: 'call_1',
      output: 'hello\n[status: running]',
    });
  });

  it('answers malformed arguments and unknown tools with error results', async () => {
    const set = tools();
    const context = { caller: undefined, toolCallId: 'c', signal: new AbortController().signal };
    expect(
      await executeOpenAIToolCall(set.tools, { name: 'task_list', arguments: '{oops' }, context),
    ).toMatchObject({
      isError: true,
      text: expect.stringMatching(
        /^Error \[INVALID_TOOL_INPUT\]: invalid input for task_list: the arguments are not JSON/,
      ),
    });
    expect(await executeOpenAIToolCall(set.tools, { name: 'rm_rf', arguments: '{}' }, context)).toEqual({
      isError: true,
      text: 'Error [UNKNOWN_TOOL]: There is no tool named "rm_rf"; the tools are: task_output, task_list, task_kill, task_digest',
    });
    expect(await executeOpenAIToolCall(set.tools, { name: 'task_list', arguments: '' }, context)).toEqual({
      isError: false,
      text: '(no background tasks)',
      value: { tasks: [] },
    });
  });
});
