/**
 * Trace context across a crash and a resume: a traced runtime in a child process starts a background
 * command and is killed with SIGKILL. The task record kept the task span's traceparent; the resumed
 * session settles the orphaned command (stopping it, unless its lifeline already did) and tells the
 * model, and that delivery's span — in the new runtime's turn, in a trace of its own — links to the span
 * of the task that ran before the crash.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isAlive } from '../../test/fixtures/bash/index.js';
import { capturingLogger } from '../../test/support/registry.js';
import { parentSpanId, startTestTracing, type TestTracing } from '../../test/support/tracing.js';
import { openSqliteSessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { parseTraceparent } from '../tracing/index.js';
import { createSessionRuntime } from './session-runtime.js';

const child = new URL('../../test/fixtures/session/traced-crash-child.mjs', import.meta.url).pathname;
const cleanups: Array<() => void | Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface ChildFacts {
  readonly taskId: string;
  readonly pid: number;
  readonly traceparent: string;
  readonly toolTraceId: string;
}

/** Runs the child until READY, kills it with SIGKILL, and returns what it printed. */
async function runAndKill(file: string, cwd: string): Promise<ChildFacts> {
  const process_ = spawn(process.execPath, [child, file, cwd], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  process_.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise((resolve) => process_.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    process_.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('READY')) resolve();
    });
    process_.once('exit', (code) => reject(new Error(`child exited early (${code}): ${stderr}`)));
  });
  process_.kill('SIGKILL');
  await exited;
  return JSON.parse(stdout.split('\n')[0]!) as ChildFacts;
}

describe('trace context across a crash and a resume', () => {
  let telemetry: TestTracing | undefined;

  it('stores the task span traceparent, and links the delivery after the resume to it', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'errand-resume-trace-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const file = join(directory, 'errand.sqlite');
    const facts = await runAndKill(file, directory);
    // The dead runtime's lifeline sidecar stops the orphaned command, racing this test; the cleanup makes
    // sure nothing leaks either way.
    cleanups.push(() => {
      try {
        process.kill(-facts.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    });
    const stored = parseTraceparent(facts.traceparent);
    expect(stored?.traceId).toBe(facts.toolTraceId);

    telemetry = startTestTracing();
    cleanups.push(() => telemetry?.close());
    const store = openSqliteSessionStore({ file });
    cleanups.push(() => store.close());
    expect(store.getTask(facts.taskId, 's1')).toMatchObject({
      status: 'running',
      traceparent: facts.traceparent,
    });
    const model = scriptedModel([{ text: 'noted, the job is gone' }]);
    const runtime = createSessionRuntime({
      store,
      model,
      tracing: telemetry.tracing,
      logger: capturingLogger(),
      // No turn of its own for the stop's notification: the person's next message carries it.
      notifications: { wakeBudget: 0 },
    });
    cleanups.push(() => runtime.dispose());
    runtime.tasks.attachController('resume-test');
    const session = runtime.resumeSession('s1');
    // The resume stops the orphaned command (or finds it stopped) and settles it; the record keeps its span.
    await vi.waitFor(
      () =>
        expect(store.getTask(facts.taskId, 's1')).toMatchObject({
          status: expect.stringMatching(/^(killed|lost)$/),
        }),
      { timeout: 10_000 },
    );
    // The stop after the restart is a span of its own in the stored span's trace, its child.
    const stop = telemetry.only('task bash');
    expect(parentSpanId(stop)).toBe(stored!.spanId);
    const ended = parseTraceparent(store.getTask(facts.taskId, 's1')!.traceparent!);
    expect(ended?.traceId).toBe(stored!.traceId);
    expect(isAlive(facts.pid)).toBe(false);

    await session.send('what happened to the job?');
    expect(JSON.stringify(model.requests[0])).toContain(`<task-id>${facts.taskId}</task-id>`);
    const turn = telemetry.only('invoke_agent');
    const delivery = telemetry.only('deliver_notifications');
    expect(parentSpanId(delivery)).toBe(turn.spanContext().spanId);
    expect(delivery.attributes).toMatchObject({
      'errand.notification.source': 'task_notification_steer',
      'errand.notification.delivered': 1,
    });
    expect(delivery.links).toHaveLength(1);
    // It links to the task's span as the store has it now: the stop's, in the crashed runtime's trace.
    expect(delivery.links[0]?.context).toMatchObject({ traceId: stored!.traceId, spanId: ended!.spanId });
    expect(delivery.links[0]?.attributes).toMatchObject({ 'errand.task.id': facts.taskId });
    // A link, not a parent: the resumed turn is not part of the crashed runtime's trace.
    expect(turn.spanContext().traceId).not.toBe(stored!.traceId);
  }, 30_000);
});
