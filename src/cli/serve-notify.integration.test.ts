/**
 * `errand serve --notify-webhook` over another process's work: a person stops that process's running command
 * from the dashboard, and its end reaches a real webhook receiver once, signed — `errand serve` reports the
 * ends of every process using the data directory. Its page's `/api/notices` says what was sent.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isAlive } from '../../test/fixtures/bash/index.js';
import { CLI_PATH, httpCall, TextCapture } from '../../test/support/mcp-client.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.js';
import { type PersonNotice, verifyWebhookSignature } from '../notify-person/index.js';
import { WEBHOOK_SECRET_VARIABLE } from './notify-flags.js';

const FIXTURE = resolve(import.meta.dirname, '../../test/fixtures/session/serve-child.mjs');
const SECRET = 'serve-webhook-key-0123456789abcd';
const children: ChildProcess[] = [];
const groups: number[] = [];
const directories: string[] = [];
let receiver: WebhookReceiver | undefined;

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGKILL');
      await exited;
    }
  }
  for (const group of groups.splice(0)) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // Already gone.
    }
    await vi.waitFor(() => expect(isAlive(group)).toBe(false), { timeout: 5000 });
  }
  await receiver?.close();
  receiver = undefined;
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function spawnTracked(args: readonly string[], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return { child, stdout: new TextCapture(child.stdout!), stderr: new TextCapture(child.stderr!) };
}

describe('errand serve --notify-webhook', () => {
  it("sends another process's end, stopped from the dashboard, to the webhook once", async () => {
    receiver = await startWebhookReceiver(() => 204);
    const home = realpathSync(mkdtempSync(join(tmpdir(), 'errand-serve-notify-')));
    directories.push(home);
    const worker = spawnTracked([FIXTURE, home]);
    const [, json] = (await worker.stdout.waitFor(/READY (\{.*\})\n/)) as unknown as [string, string];
    const ready = JSON.parse(json) as { sessionId: string; taskId: string; pid: number };
    groups.push(ready.pid);
    const serve = spawnTracked(
      [CLI_PATH, 'serve', '--home', home, '--port', '0', '--notify-webhook', receiver.url],
      { ...process.env, [WEBHOOK_SECRET_VARIABLE]: SECRET },
    );
    const [, url] = (await serve.stdout.waitFor(
      /Errand dashboard: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)\n/,
    )) as unknown as [string, string];
    const page = new URL(url);
    const token = page.searchParams.get('token')!;
    const headers = { authorization: `Bearer ${token}` };
    // The dashboard knows the running work before it is stopped (its level), so only the end is new.
    await vi.waitFor(
      async () => {
        const works = await httpCall(
          new URL(`/api/sessions/${ready.sessionId}/background-works`, page.origin).href,
          {
            headers,
          },
        );
        expect(JSON.parse(works.body).backgroundWorks).toContainEqual(
          expect.objectContaining({ workId: ready.taskId, state: 'running' }),
        );
      },
      { timeout: 10_000 },
    );
    const stop = await httpCall(new URL('/api/commands', page.origin).href, {
      method: 'POST',
      headers: { ...headers, origin: page.origin },
      body: JSON.stringify({ type: 'cancelBackgroundWork', workId: ready.taskId }),
    });
    expect(stop.status).toBe(200);
    await vi.waitFor(() => expect(receiver!.requests).toHaveLength(1), { timeout: 15_000 });
    const [request] = receiver.requests;
    const notice = JSON.parse(request!.body) as PersonNotice;
    expect(notice).toMatchObject({
      schemaVersion: 1,
      event: 'task-ended',
      sessionId: ready.sessionId,
      task: { id: ready.taskId, status: 'killed', label: 'a long sleep' },
    });
    expect(
      verifyWebhookSignature({
        secret: SECRET,
        header: request!.headers['errand-signature'] as string,
        body: request!.body,
        nowMs: Date.now(),
      }).ok,
    ).toBe(true);
    const notices = await httpCall(new URL('/api/notices', page.origin).href, { headers });
    expect(JSON.parse(notices.body)).toMatchObject({
      enabled: true,
      sent: [
        {
          notice: { id: notice.id },
          sinks: expect.arrayContaining([expect.objectContaining({ sink: 'webhook' })]),
        },
      ],
    });
    expect(notices.body).not.toContain(SECRET);
    const exited = new Promise((done) => serve.child.once('exit', (code, signal) => done({ code, signal })));
    serve.child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(serve.stderr.text).not.toContain(SECRET);
    // Still exactly one: nothing was sent twice on the way out.
    expect(receiver.requests).toHaveLength(1);
  });
});
