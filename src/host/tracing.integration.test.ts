/**
 * OpenTelemetry across the loop, with the SDK's in-memory exporter and real bash processes: a background
 * command started in one turn whose end is delivered in a later turn. The task's span is a child of the
 * `execute_tool` span that started it and carries the exit facts; the later turn is a trace of its own,
 * and its `deliver_notifications` span links to the task's span instead of pretending to be its child.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../test/fixtures/bash/index.js';
import { parentSpanId, startTestTracing, type TestTracing } from '../../test/support/tracing.js';
import type { Session, SessionEvent } from '../session/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { createTrustedCaller } from '../tasks/index.js';
import { scriptedModel } from '../testing/index.js';
import { formatTraceparent } from '../tracing/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const trusted = createTrustedCaller('tracing-test');
let telemetry: TestTracing;
let runtime: ErrandRuntime | undefined;
let directory: string;

beforeEach(() => {
  telemetry = startTestTracing();
  directory = mkdtempSync(join(tmpdir(), 'errand-tracing-'));
});

afterEach(async () => {
  await runtime?.dispose();
  runtime = undefined;
  await telemetry.close();
  rmSync(directory, { recursive: true, force: true });
});

/** Resolves with the `turn-end` event of turn `turnId`. */
function turnEnded(session: Session, turnId: number): Promise<SessionEvent> {
  return new Promise((resolve) => {
    const stop = session.on((event) => {
      if (event.type === 'turn-end' && event.turnId === turnId) {
        stop();
        resolve(event);
      }
    });
  });
}

const traceparentOf = (span: ReadableSpan) => formatTraceparent(span.spanContext());

describe('tracing a background task that ends in a later turn', () => {
  it('links the delivery in the later turn to the task span, which is a child of execute_tool', async () => {
    const release = join(directory, 'release');
    // The command waits for the test to create a file; nothing in the test waits for time to pass.
    const command = `while [ ! -e ${JSON.stringify(release)} ]; do sleep 0.01; done; echo finished`;
    const model = scriptedModel([
      { toolCalls: [{ id: 'call_bg', name: 'bash', input: { command, run_in_background: true } }] },
      { text: 'started it', usage: { inputTokens: 12, outputTokens: 3 } },
      { text: 'it finished' },
    ]);
    runtime = await createErrandRuntime({
      model,
      store: createMemorySessionStore(),
      tracing: telemetry.tracing,
      pty: false,
      subagents: false,
      logger: capturingLogger(),
    });
    const session = runtime.createSession({ id: 's1', cwd: directory });
    await session.send('start the job');
    const [task] = runtime.tasks.list(trusted);
    expect(task?.status).toBe('running');
    const secondTurn = turnEnded(session, 2);
    writeFileSync(release, '');
    expect(existsSync(release)).toBe(true);
    await secondTurn;

    const [firstTurn, laterTurn] = telemetry.spans('invoke_agent');
    expect(firstTurn?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.conversation.id': 's1',
      'errand.turn.source': 'user',
    });
    const tool = telemetry.only('execute_tool bash');
    expect(tool.spanContext().traceId).toBe(firstTurn!.spanContext().traceId);
    expect(parentSpanId(tool)).toBe(firstTurn!.spanContext().spanId);
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'bash',
      'gen_ai.tool.call.id': 'call_bg',
      'errand.task.id': task!.id,
    });
    const chats = telemetry.spans('chat scripted');
    expect(chats.length).toBe(3);
    expect(chats[1]?.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 3,
    });

    // The task's span: a child of the call that started it, outliving it, with the exit facts.
    const taskSpan = telemetry.only('task bash');
    expect(parentSpanId(taskSpan)).toBe(tool.spanContext().spanId);
    expect(taskSpan.spanContext().traceId).toBe(tool.spanContext().traceId);
    expect(taskSpan.endTime[0] * 1e9 + taskSpan.endTime[1]).toBeGreaterThan(
      tool.endTime[0] * 1e9 + tool.endTime[1],
    );
    expect(taskSpan.attributes).toMatchObject({
      'errand.task.id': task!.id,
      'errand.task.kind': 'bash',
      'errand.task.status': 'completed',
      'errand.task.reason': 'completed',
      'process.exit.code': 0,
      'process.pid': task!.detail.pid,
      'errand.task.output_bytes': 'finished\n'.length,
      'gen_ai.conversation.id': 's1',
      'gen_ai.tool.call.id': 'call_bg',
    });
    expect(taskSpan.events.map((event) => event.name)).toEqual(['errand.task.settled']);
    // The record carries the span's traceparent, and so does the store.
    expect(runtime.tasks.get(task!.id, trusted).traceparent).toBe(traceparentOf(taskSpan));
    expect(runtime.store.getTask(task!.id, 's1')?.traceparent).toBe(traceparentOf(taskSpan));

    // The later turn is a trace of its own; its delivery links to the task span (no fake parent).
    expect(laterTurn?.attributes).toMatchObject({ 'errand.turn.source': 'background_task' });
    expect(parentSpanId(laterTurn!)).toBeUndefined();
    expect(laterTurn!.spanContext().traceId).not.toBe(taskSpan.spanContext().traceId);
    const delivery = telemetry.only('deliver_notifications');
    expect(parentSpanId(delivery)).toBe(laterTurn!.spanContext().spanId);
    expect(delivery.spanContext().traceId).toBe(laterTurn!.spanContext().traceId);
    expect(delivery.attributes).toMatchObject({
      'errand.notification.source': 'background_task',
      'errand.notification.count': 1,
      'errand.notification.delivered': 1,
      'gen_ai.conversation.id': 's1',
    });
    expect(delivery.links).toHaveLength(1);
    expect(delivery.links[0]?.context.traceId).toBe(taskSpan.spanContext().traceId);
    expect(delivery.links[0]?.context.spanId).toBe(taskSpan.spanContext().spanId);
    expect(delivery.links[0]?.attributes).toMatchObject({
      'errand.task.id': task!.id,
      'errand.task.attempt': 1,
    });
  });

  it('a killed command and a failed one end their spans with the facts; a refused start leaves none', async () => {
    const model = scriptedModel([
      { toolCalls: [{ id: 'call_fail', name: 'bash', input: { command: 'echo no >&2; exit 3' } }] },
      { text: 'failed' },
    ]);
    runtime = await createErrandRuntime({
      model,
      store: createMemorySessionStore(),
      tracing: telemetry.tracing,
      pty: false,
      subagents: false,
      tasks: { maxLiveTasks: 1 },
      logger: capturingLogger(),
    });
    const session = runtime.createSession({ id: 's1', cwd: directory });
    await session.send('fail');
    const failed = telemetry.only('task bash');
    expect(failed.attributes).toMatchObject({ 'errand.task.status': 'failed', 'process.exit.code': 3 });
    expect(failed.status).toMatchObject({ code: 2 });
    const tool = telemetry.only('execute_tool bash');
    expect(tool.status).toMatchObject({ code: 0 });

    const started = await runtime.bash.start({ command: 'sleep 1000', cwd: directory });
    await expect(runtime.bash.start({ command: 'true', cwd: directory })).rejects.toMatchObject({
      code: 'ADMISSION_LIMIT',
    });
    await runtime.tasks.kill(started.taskId, trusted, 'enough');
    await runtime.tasks.wait(started.taskId, 10_000, trusted);
    const [, killed] = telemetry.spans('task bash');
    expect(killed?.attributes).toMatchObject({
      'errand.task.status': 'killed',
      'errand.task.reason': 'cancelled',
    });
    expect(killed?.events.map((event) => event.name)).toContain('errand.task.stopping');
    // The refused start never became a task: no span for it, and nothing stored.
    expect(telemetry.spans('task bash')).toHaveLength(2);
  });
});
