import { describe, expect, it } from 'vitest';
import { formatBashNotification } from '../notifications/index.js';
import type { MessageRecord } from '../store/index.js';
import { asSessionId, asTaskId, type TaskSnapshot } from '../tasks/index.js';
import { summarizeToolInput, toConversationMessage } from './conversation-view.js';

function message(patch: Partial<MessageRecord>): MessageRecord {
  return {
    schemaVersion: 1,
    sessionId: asSessionId('s'),
    seq: 1,
    role: 'assistant',
    content: { text: '' },
    visibility: 'all',
    source: 'assistant',
    branchGeneration: 0,
    createdAt: 5,
    abandoned: false,
    ...patch,
  } as MessageRecord;
}

const limits = { maxTextBytes: 64, maxResultBytes: 64 };

describe('a conversation message as the dashboard shows it', () => {
  it('cuts text and tool results to their byte budgets on a character boundary, and says so', () => {
    const text = `${'é'.repeat(40)} the end`;
    const view = toConversationMessage(
      message({
        role: 'tool',
        source: 'tool',
        content: {
          toolResults: [
            { toolCallId: 'call_1', output: 'ü'.repeat(100), isError: true },
            { toolCallId: 'call_2', output: { ok: true } },
          ],
        },
      }),
      limits,
    );
    expect(view.toolResults).toEqual([
      { toolCallId: 'call_1', isError: true, text: 'ü'.repeat(32), truncated: true },
      { toolCallId: 'call_2', isError: false, text: '{"ok":true}', truncated: false },
    ]);
    const said = toConversationMessage(message({ content: { text } }), limits);
    expect(said.text).toBe('é'.repeat(32));
    expect(said.truncated).toBe(true);
    expect(Buffer.byteLength(said.text ?? '')).toBeLessThanOrEqual(64);
  });

  it('summarizes a tool call by its command, else its description or prompt, else its input, on one bounded line', () => {
    expect(summarizeToolInput({ command: 'npm test\n  -- --watch', description: 'tests' })).toBe(
      'npm test -- --watch',
    );
    expect(summarizeToolInput({ description: 'look around', prompt: 'x' })).toBe('look around');
    expect(summarizeToolInput({ prompt: 'Find the bug' })).toBe('Find the bug');
    expect(summarizeToolInput({ task_id: 'bash-1' })).toBe('{"task_id":"bash-1"}');
    expect(summarizeToolInput(null)).toBe('');
    const long = summarizeToolInput({ command: 'x'.repeat(500) });
    expect(long).toHaveLength(200);
    expect(long.endsWith('…')).toBe(true);
    const view = toConversationMessage(
      message({
        content: {
          toolCalls: [
            { id: 'call_1', name: 'bash', input: { command: 'make', description: 'build it' } },
            { id: 'call_2', name: 'agent', input: { description: 'research', prompt: 'Read the docs' } },
          ],
        },
      }),
      limits,
    );
    expect(view.toolCalls).toEqual([
      { id: 'call_1', name: 'bash', summary: 'make', description: 'build it' },
      { id: 'call_2', name: 'agent', summary: 'research', description: null },
    ]);
  });

  it('reads the notifications a delivered message carried, beyond the text it shows', () => {
    const snapshot = {
      id: asTaskId('bash-9'),
      kind: 'bash',
      label: 'npm test',
      status: 'failed',
      detail: { toolUseId: 'call_9', exitCode: 1 },
      isBackgrounded: true,
      startedAt: 1,
      endedAt: 2,
      attempt: 1,
    } as unknown as TaskSnapshot;
    const text = `${'padding '.repeat(20)}\n\n${formatBashNotification({ snapshot })}`;
    const view = toConversationMessage(
      message({ role: 'user', visibility: 'model-only', source: 'background_task', content: { text } }),
      limits,
    );
    expect(view.truncated).toBe(true);
    expect(view.notifications).toEqual([
      expect.objectContaining({ taskId: 'bash-9', toolUseId: 'call_9', status: 'failed', exitCode: 1 }),
    ]);
  });
});
