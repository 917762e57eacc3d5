/**
 * The webhook in the assembled runtime, against a real HTTP receiver: every background end arrives
 * exactly once, signed (the HMAC checked here), after retries when the receiver answers 500; a receiver
 * that never answers holds up neither the model's notification nor the others; the key shows up nowhere.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.js';
import { createErrandRuntime, type ErrandRuntime } from '../host/index.js';
import { createDashboardServer } from '../server/index.js';
import { createMemorySessionStore } from '../store/index.js';
import { createTrustedCaller } from '../tasks/index.js';
import { scriptedModel } from '../testing/index.js';
import { type PersonNotice, verifyWebhookSignature } from './index.js';

const SECRET = 'whsec-test-0123456789-abcdefghij';
let runtime: ErrandRuntime | undefined;
let receiver: WebhookReceiver | undefined;

afterEach(async () => {
  await runtime?.dispose();
  runtime = undefined;
  await receiver?.close();
  receiver = undefined;
});

function replies(count: number) {
  const model = scriptedModel([]);
  for (let index = 0; index < count; index += 1) model.push({ text: 'Noted.' });
  return model;
}

async function startRuntime(url: string, webhook: Record<string, unknown> = {}) {
  const logger = capturingLogger();
  runtime = await createErrandRuntime({
    model: replies(20),
    store: createMemorySessionStore(),
    pty: false,
    logger,
    notifyPerson: {
      webhook: { url, secret: SECRET, initialBackoffMs: 5, maxBackoffMs: 40, timeoutMs: 10_000, ...webhook },
      browser: false,
    },
  });
  return { runtime, logger, session: runtime.createSession({ id: 'main' }) };
}

/** The delivered (2xx) requests, parsed, one per notice id. */
function deliveredNotices(received: WebhookReceiver): PersonNotice[] {
  return received.requests
    .filter((request) => request.status !== null && request.status < 300)
    .map((request) => JSON.parse(request.body) as PersonNotice);
}

describe('the webhook sink', () => {
  it('delivers each end once, signed, retrying after HTTP 500', async () => {
    // Every notice's first two attempts are answered 500; the third is taken.
    receiver = await startWebhookReceiver((_body, attempt) => (attempt <= 2 ? 500 : 204));
    const { session } = await startRuntime(receiver.url);
    const commands = ['true', 'exit 3', 'echo done; sleep 0.05'];
    const ids: string[] = [];
    for (const command of commands) {
      const started = await runtime!.bash.start({ command, owner: session.owner, background: true });
      ids.push(started.taskId);
    }
    await vi.waitFor(() => expect(deliveredNotices(receiver!)).toHaveLength(3), { timeout: 15_000 });
    await runtime!.personNotifier!.whenIdle();
    const delivered = deliveredNotices(receiver);
    expect(delivered.map((notice) => notice.task.id).sort()).toEqual([...ids].sort());
    const byTask = new Map(delivered.map((notice) => [notice.task.id, notice]));
    expect(byTask.get(ids[0]!)).toMatchObject({
      schemaVersion: 1,
      event: 'task-ended',
      sessionId: 'main',
      task: { kind: 'bash', taskKind: 'bash', status: 'completed', exitCode: 0 },
    });
    expect(byTask.get(ids[1]!)).toMatchObject({ event: 'task-failed', task: { exitCode: 3 } });
    expect(byTask.get(ids[1]!)!.summary).toBe(`${ids[1]} "exit 3" failed with exit code 3`);
    // Three attempts per notice, same id and body each time; each one signed over its raw body.
    expect(receiver.requests).toHaveLength(9);
    for (const request of receiver.requests) {
      const verdict = verifyWebhookSignature({
        secret: SECRET,
        header: request.headers['errand-signature'] as string,
        body: request.body,
        nowMs: Date.now(),
      });
      expect(verdict.ok).toBe(true);
      expect(request.headers['content-type']).toBe('application/json');
      const notice = JSON.parse(request.body) as PersonNotice;
      expect(request.headers['errand-notice-id']).toBe(notice.id);
    }
    for (const notice of delivered) {
      const attempts = receiver.requests.filter(
        (request) => request.headers['errand-notice-id'] === notice.id,
      );
      expect(attempts.map((request) => request.status)).toEqual([500, 500, 204]);
      expect(new Set(attempts.map((request) => request.body)).size).toBe(1);
    }
    // A tampered body or a wrong key fails the check; so does a replay outside the window.
    const sample = receiver.requests[0]!;
    const header = sample.headers['errand-signature'] as string;
    expect(
      verifyWebhookSignature({ secret: SECRET, header, body: `${sample.body} `, nowMs: Date.now() }),
    ).toEqual({ ok: false, reason: 'mismatch' });
    expect(
      verifyWebhookSignature({ secret: `${SECRET}x`, header, body: sample.body, nowMs: Date.now() }),
    ).toEqual({ ok: false, reason: 'mismatch' });
    expect(
      verifyWebhookSignature({ secret: SECRET, header, body: sample.body, nowMs: Date.now() + 600_000 }),
    ).toEqual({ ok: false, reason: 'stale' });
    // The sent view says what became of each.
    const sent = runtime!.personNotifier!.sent();
    expect(sent).toHaveLength(3);
    for (const record of sent) {
      expect(record.sinks).toEqual([
        expect.objectContaining({ sink: 'webhook', state: 'delivered', attempts: 3, httpStatus: 204 }),
      ]);
      // The view names the receiver by its origin, never its path or query.
      expect(record.sinks[0]!.target).toBe(new URL(receiver.url).origin);
    }
  });

  it('gives up on a 4xx answer at once, and after maxAttempts on 5xx', async () => {
    receiver = await startWebhookReceiver((body) => (JSON.parse(body).event === 'task-failed' ? 503 : 400));
    const { session, logger } = await startRuntime(receiver.url, { maxAttempts: 3 });
    await runtime!.bash.start({ command: 'true', owner: session.owner, background: true });
    await runtime!.bash.start({ command: 'exit 1', owner: session.owner, background: true });
    await vi.waitFor(
      () =>
        expect(runtime!.personNotifier!.sent().filter((r) => r.sinks[0]?.state === 'failed')).toHaveLength(2),
      { timeout: 15_000 },
    );
    const byEvent = new Map(
      runtime!.personNotifier!.sent().map((record) => [record.notice.event, record.sinks[0]]),
    );
    expect(byEvent.get('task-ended')).toMatchObject({ attempts: 1, httpStatus: 400, error: 'HTTP_400' });
    expect(byEvent.get('task-failed')).toMatchObject({ attempts: 3, httpStatus: 503, error: 'HTTP_503' });
    expect(receiver.requests).toHaveLength(4);
    expect(logger.warnings.map((warning) => warning.message)).toContain(
      'a webhook notice could not be delivered',
    );
  });

  it('a receiver that never answers delays neither the model nor the next notices past their timeout', async () => {
    receiver = await startWebhookReceiver(() => 'hang');
    const { session, logger } = await startRuntime(receiver.url, {
      maxAttempts: 2,
      concurrency: 1,
      timeoutMs: 300,
    });
    const queued: string[] = [];
    session.on((event) => {
      if (event.type === 'notification-queued') queued.push(event.taskId);
    });
    const first = await runtime!.bash.start({ command: 'true', owner: session.owner, background: true });
    // The model's notification is queued while the webhook's request hangs.
    await vi.waitFor(() => expect(queued).toContain(first.taskId), { timeout: 10_000 });
    await vi.waitFor(() => expect(receiver!.requests.length).toBeGreaterThanOrEqual(1), { timeout: 10_000 });
    await vi.waitFor(
      () =>
        expect(runtime!.personNotifier!.sent()[0]?.sinks[0]).toMatchObject({
          state: 'failed',
          error: 'TIMEOUT',
        }),
      { timeout: 10_000 },
    );
    // Two attempts, each abandoned at its timeout (a request aborted before its body arrived is not seen there).
    expect(runtime!.personNotifier!.sent()[0]!.sinks[0]!.attempts).toBe(2);
    expect(receiver.requests.length).toBeLessThanOrEqual(2);
    expect(logger.warnings.some((warning) => JSON.stringify(warning).includes(SECRET))).toBe(false);
  });

  it('retries while the receiver is down and delivers once it is back, exactly once', async () => {
    const first = await startWebhookReceiver(() => 204);
    const url = first.url;
    const port = Number(new URL(url).port);
    await first.close();
    const { session } = await startRuntime(url, { maxAttempts: 100, maxBackoffMs: 20 });
    const { taskId } = await runtime!.bash.start({
      command: 'exit 2',
      owner: session.owner,
      background: true,
    });
    await vi.waitFor(
      () =>
        expect(runtime!.personNotifier!.sent()[0]?.sinks[0]).toMatchObject({
          state: 'retrying',
          error: 'ECONNREFUSED',
        }),
      { timeout: 10_000 },
    );
    receiver = await startWebhookReceiver(() => 204, port);
    await vi.waitFor(() => expect(runtime!.personNotifier!.sent()[0]?.sinks[0]?.state).toBe('delivered'), {
      timeout: 10_000,
    });
    await runtime!.personNotifier!.whenIdle();
    expect(receiver.requests).toHaveLength(1);
    expect(JSON.parse(receiver.requests[0]!.body)).toMatchObject({
      event: 'task-failed',
      task: { id: taskId },
    });
    expect(runtime!.personNotifier!.sent()[0]!.sinks[0]!.attempts).toBeGreaterThan(1);
  });

  it('never shows the key: not in logs, events, task details, the sent view, or refusals', async () => {
    receiver = await startWebhookReceiver(() => 500);
    const { session, logger } = await startRuntime(receiver.url, { maxAttempts: 2 });
    const seen: string[] = [];
    runtime!.events.subscribe((event) => seen.push(JSON.stringify(event)));
    const { taskId } = await runtime!.bash.start({
      command: 'env; echo out',
      owner: session.owner,
      background: true,
    });
    await vi.waitFor(() => expect(runtime!.personNotifier!.sent()[0]?.sinks[0]?.state).toBe('failed'), {
      timeout: 15_000,
    });
    const trusted = createTrustedCaller('test');
    const everything = [
      ...seen,
      JSON.stringify(logger.warnings),
      JSON.stringify(runtime!.tasks.list(trusted)),
      JSON.stringify(runtime!.personNotifier!.sent()),
      JSON.stringify(runtime!.personNotifier!.sinks),
      runtime!.outputSnapshot(taskId)?.text ?? '',
      ...receiver.requests.map((request) => request.body),
    ].join('\n');
    // The dashboard's view of what was sent.
    const server = createDashboardServer({
      backend: runtime!.dashboard,
      notices: runtime!.personNotifier!,
      logger: { warn: vi.fn() },
    });
    const address = await server.listen();
    let api = '';
    try {
      const response = await fetch(`${address.origin}/api/notices`, {
        headers: { authorization: `Bearer ${server.token}` },
      });
      api = await response.text();
      expect(JSON.parse(api)).toMatchObject({ enabled: true, sinks: [{ sink: 'webhook' }] });
    } finally {
      await server.close();
    }
    expect(`${everything}\n${api}`).toContain(taskId);
    expect(`${everything}\n${api}`).not.toContain(SECRET);
    // Nor the URL's path or query.
    expect(api).not.toContain('channel=ops');
    // A key too short is refused without being echoed.
    await expect(
      createErrandRuntime({
        model: replies(0),
        store: createMemorySessionStore(),
        notifyPerson: { webhook: { url: receiver.url, secret: 'short-key' } },
      }),
    ).rejects.toThrow(
      /Expected `notifyPerson\.webhook\.secret` to be a string of at least 16 characters, got "\(hidden\)"/,
    );
  });
});
