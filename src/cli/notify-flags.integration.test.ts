/**
 * `errand mcp --notify-webhook`: a background command's end reaches a real receiver, signed with the key
 * read from the environment — a key that the commands the model runs never see (it is taken out of the
 * environment before anything starts), and that shows up in no tool result and nothing on stderr.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type McpCli, startMcpCli, textBlocks } from '../../test/support/mcp-client.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.js';
import { type PersonNotice, verifyWebhookSignature } from '../notify-person/index.js';
import { WEBHOOK_SECRET_VARIABLE } from './notify-flags.js';

const SECRET = 'mcp-webhook-key-0123456789abcdef';
const clis: McpCli[] = [];
const directories: string[] = [];
let receiver: WebhookReceiver | undefined;

afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close();
  await receiver?.close();
  receiver = undefined;
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe('errand mcp --notify-webhook', () => {
  it('posts each end signed, and keeps the key from the commands and the client', async () => {
    receiver = await startWebhookReceiver(() => 204);
    const home = mkdtempSync(join(tmpdir(), 'errand-mcp-notify-'));
    directories.push(home);
    process.env[WEBHOOK_SECRET_VARIABLE] = SECRET;
    let cli: McpCli;
    try {
      cli = await startMcpCli({ args: ['--home', home, '--cwd', home, '--notify-webhook', receiver.url] });
    } finally {
      delete process.env[WEBHOOK_SECRET_VARIABLE];
    }
    clis.push(cli);
    const started = await cli.call('bash', {
      command: `env; echo "key:$${WEBHOOK_SECRET_VARIABLE}:"`,
      run_in_background: true,
    });
    const taskId = /bash-\d+/.exec(textBlocks(started).join('\n'))?.[0] ?? '';
    expect(taskId).toMatch(/^bash-\d+$/);
    await vi.waitFor(() => expect(receiver!.requests).toHaveLength(1), { timeout: 15_000 });
    const [request] = receiver.requests;
    const notice = JSON.parse(request!.body) as PersonNotice;
    expect(notice).toMatchObject({
      schemaVersion: 1,
      event: 'task-ended',
      task: { id: taskId, exitCode: 0 },
    });
    expect(
      verifyWebhookSignature({
        secret: SECRET,
        header: request!.headers['errand-signature'] as string,
        body: request!.body,
        nowMs: Date.now(),
      }).ok,
    ).toBe(true);
    const output = textBlocks(await cli.call('task_output', { task_id: taskId, wait: true })).join('\n');
    expect(output).toContain('key::');
    expect(output).not.toContain(SECRET);
    expect(output).not.toContain(`${WEBHOOK_SECRET_VARIABLE}=`);
    expect(cli.stderr.text).not.toContain(SECRET);
  });
});
