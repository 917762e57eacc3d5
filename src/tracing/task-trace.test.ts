/**
 * The task span through the registry, with the OpenTelemetry SDK's in-memory exporter: parented to the
 * caller's span, events for state changes, a start that throws, a stored parent, a resume linked to the
 * previous attempt, the traceparent projected (and kept when tracing is off), and refused bad input.
 */
import * as api from '@opentelemetry/api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parentSpanId, startTestTracing, type TestTracing } from '../../test/support/tracing.js';
import { createTaskService } from '../registry/index.js';
import { createTrustedCaller, type TaskService } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { openTelemetryTracing } from './open-telemetry.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';
import { NOOP_TRACING } from './tracing.js';

const trusted = createTrustedCaller('trace-test');
const STORED = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
let telemetry: TestTracing;
let tasks: TaskService;

beforeEach(() => {
  telemetry = startTestTracing();
  tasks = createTaskService({ tracing: telemetry.tracing, requireController: false });
});

afterEach(async () => {
  await tasks.dispose();
  await telemetry.close();
});

describe('the task span', () => {
  it('is a child of the span active at start, with events for state changes and the facts at its end', async () => {
    const tool = telemetry.tracing.startSpan('execute_tool scripted');
    const task = scriptedTask({ background: false, spec: { detail: { toolUseId: 'call_7' } } });
    const snapshot = await telemetry.tracing.withSpan(tool, () => tasks.start(task.spec));
    tool.end();
    // The producer's run() ran with the task span active.
    expect(snapshot.traceparent).toBeDefined();
    tasks.requestBackground(snapshot.id, trusted);
    task.context!.updateDetail({ pid: 4242 });
    await tasks.kill(snapshot.id, trusted, 'stop', { initiator: 'model' });
    await tasks.wait(snapshot.id, 1000, trusted);
    const span = telemetry.only('task scripted');
    expect(parentSpanId(span)).toBe(telemetry.only('execute_tool scripted').spanContext().spanId);
    expect(formatTraceparent(span.spanContext())).toBe(snapshot.traceparent);
    expect(span.attributes).toMatchObject({
      'errand.task.id': snapshot.id,
      'errand.task.attempt': 1,
      'gen_ai.tool.call.id': 'call_7',
      'process.pid': 4242,
      'errand.task.status': 'killed',
      'errand.task.backgrounded': true,
      'errand.task.stop_initiator': 'model',
    });
    expect(span.events.map((event) => event.name)).toEqual([
      'errand.task.backgrounded',
      'errand.task.stopping',
      'errand.task.settled',
    ]);
    expect(span.events[1]?.attributes).toEqual({ 'errand.task.stop_initiator': 'model' });
  });

  it('a producer whose run() throws leaves one span, ended as an error, and no task', async () => {
    const spec = {
      kind: 'scripted',
      label: 'broken',
      run: () => {
        throw new Error('no resources');
      },
    };
    await expect(tasks.start(spec)).rejects.toThrow('no resources');
    const span = telemetry.only('task scripted');
    expect(span.status).toEqual({ code: 2, message: 'no resources' });
    expect(span.attributes['error.type']).toBe('start_failed');
    expect(tasks.list(trusted)).toEqual([]);
  });

  it('continues a stored traceparent, and links a resumed attempt to the previous one', async () => {
    const first = scriptedTask({ spec: { traceparent: STORED } });
    const snapshot = await tasks.start(first.spec);
    first.settle({ status: 'failed', error: 'exit 1' });
    await tasks.wait(snapshot.id, 1000, trusted);
    const firstSpan = telemetry.only('task scripted');
    expect(firstSpan.spanContext().traceId).toBe(parseTraceparent(STORED)!.traceId);
    expect(parentSpanId(firstSpan)).toBe(parseTraceparent(STORED)!.spanId);
    expect(firstSpan.status.code).toBe(2);

    const second = scriptedTask({ spec: { resumeId: snapshot.id } });
    const resumed = await tasks.start(second.spec);
    second.settle();
    await tasks.wait(resumed.id, 1000, trusted);
    const secondSpan = telemetry.spans('task scripted')[1]!;
    expect(resumed.attempt).toBe(2);
    expect(resumed.traceparent).toBe(formatTraceparent(secondSpan.spanContext()));
    expect(secondSpan.attributes['errand.task.attempt']).toBe(2);
    expect(secondSpan.links).toHaveLength(1);
    expect(secondSpan.links[0]?.context.spanId).toBe(firstSpan.spanContext().spanId);
    expect(secondSpan.links[0]?.attributes).toEqual({ 'errand.link': 'previous_attempt' });
  });

  it('with tracing off nothing is traced, a given traceparent is still kept, and a bad one is refused', async () => {
    const untraced = createTaskService({ tracing: false, requireController: false });
    try {
      const plain = await untraced.start(scriptedTask().spec);
      expect(plain.traceparent).toBeUndefined();
      const carried = await untraced.start(scriptedTask({ spec: { traceparent: STORED } }).spec);
      expect(carried.traceparent).toBe(STORED);
      await expect(
        untraced.start(scriptedTask({ spec: { traceparent: 'not-a-trace' } }).spec),
      ).rejects.toMatchObject({
        code: 'INVALID_TASK_SPEC',
        message: expect.stringContaining('Expected `traceparent` to be a W3C traceparent'),
      });
      expect(() => createTaskService({ tracing: { startSpan: 1 } as never })).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('`tracing`') }),
      );
    } finally {
      await untraced.dispose();
    }
    expect(telemetry.spans()).toEqual([]);
    expect(NOOP_TRACING.startSpan('x')).toBe(NOOP_TRACING.startSpan('y'));
  });

  it('starts no span while the global API has nothing to record with and no span is active', async () => {
    // The global API with its tracer's starts counted: what the default tracing uses.
    let started = 0;
    const counting = {
      ...api,
      trace: Object.assign(Object.create(api.trace) as typeof api.trace, {
        getTracer: (name: string, version?: string) => {
          const tracer = api.trace.getTracer(name, version);
          return {
            startSpan: (...args: Parameters<typeof tracer.startSpan>) => {
              started += 1;
              return tracer.startSpan(...args);
            },
          };
        },
      }),
    };
    const globalTasks = createTaskService({
      tracing: openTelemetryTracing({ api: counting }),
      requireController: false,
    });
    try {
      expect((await globalTasks.start(scriptedTask().spec)).traceparent).toBeUndefined();
      expect(started).toBe(0);
      // A span active in the caller's context names a trace: the task's span continues it.
      const parent = telemetry.provider.getTracer('caller').startSpan('caller');
      const inside = await api.context.with(api.trace.setSpan(api.context.active(), parent), () =>
        globalTasks.start(scriptedTask().spec),
      );
      parent.end();
      expect(started).toBe(1);
      expect(parseTraceparent(inside.traceparent!)?.traceId).toBe(parent.spanContext().traceId);
      // An SDK registered later is used from then on.
      api.trace.setGlobalTracerProvider(telemetry.provider);
      try {
        const recorded = await globalTasks.start(scriptedTask().spec);
        expect(started).toBe(2);
        await globalTasks.kill(recorded.id, trusted, 'stop');
        await globalTasks.wait(recorded.id, 1000, trusted);
        expect(formatTraceparent(telemetry.only('task scripted').spanContext())).toBe(recorded.traceparent);
      } finally {
        api.trace.disable();
      }
    } finally {
      await globalTasks.dispose();
    }
  });

  it('records nothing, and stores no traceparent, when the API has no provider to record with', async () => {
    // The default: the global API, whose tracer provider is the no-op one until an SDK registers.
    const globalTasks = createTaskService({ requireController: false });
    try {
      expect(api.trace.getTracerProvider().getTracer('x').startSpan('probe').isRecording()).toBe(false);
      const snapshot = await globalTasks.start(scriptedTask().spec);
      expect(snapshot.traceparent).toBeUndefined();
    } finally {
      await globalTasks.dispose();
    }
  });
});
