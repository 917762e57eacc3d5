/** The `--notify-*` flags: what they ask for, the key read from the environment and taken out of it, and the refusals. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { notifyOptionsFromFlags, WEBHOOK_SECRET_VARIABLE } from './notify-flags.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

const SECRET = 'a-webhook-key-of-32-characters!!';

describe('the notify flags', () => {
  it('give nothing without a flag, unless a dashboard wants browser notices', () => {
    expect(notifyOptionsFromFlags({}, {})).toBeUndefined();
    expect(notifyOptionsFromFlags({}, {}, { always: true })).toEqual({});
  });

  it('read the webhook key from the environment and take it out, so commands started later never see it', () => {
    const environment: NodeJS.ProcessEnv = { [WEBHOOK_SECRET_VARIABLE]: SECRET, PATH: '/bin' };
    const options = notifyOptionsFromFlags(
      {
        'notify-webhook': 'https://hooks.example/errand',
        'notify-desktop': true,
        'notify-events': 'task-failed,input-needed',
      },
      environment,
    );
    expect(options).toEqual({
      webhook: {
        url: 'https://hooks.example/errand',
        secret: SECRET,
        events: ['task-failed', 'input-needed'],
      },
      desktop: { events: ['task-failed', 'input-needed'] },
      browser: { events: ['task-failed', 'input-needed'] },
    });
    expect(environment).toEqual({ PATH: '/bin' });
  });

  it('turn the browser sink off where no page can show it, unless the config file asks for it', () => {
    const environment = { [WEBHOOK_SECRET_VARIABLE]: SECRET };
    expect(
      notifyOptionsFromFlags({ 'notify-webhook': 'https://hooks.example' }, environment, { browser: false }),
    ).toEqual({ webhook: { url: 'https://hooks.example', secret: SECRET }, browser: false });
    expect(notifyOptionsFromFlags({ 'notify-desktop': true }, {}, { browser: true })).toEqual({
      desktop: true,
    });
  });

  it('refuse a webhook without its key, and an unknown event, naming the value', () => {
    expect(() => notifyOptionsFromFlags({ 'notify-webhook': 'https://hooks.example' }, {})).toThrow(
      `\`--notify-webhook\` needs its HMAC key in $${WEBHOOK_SECRET_VARIABLE}`,
    );
    expect(() => notifyOptionsFromFlags({ 'notify-events': 'task-failed,task-done' }, {})).toThrow(
      'Expected `--notify-events` to list task-ended, task-failed, monitor-match, input-needed, got "task-done"',
    );
  });

  it('read a config file, without echoing a broken one (it may hold the key)', () => {
    const directory = mkdtempSync(join(tmpdir(), 'errand-notify-config-'));
    directories.push(directory);
    const good = join(directory, 'notify.json');
    writeFileSync(
      good,
      JSON.stringify({
        webhook: { url: 'https://hooks.example', rateLimit: { perMinute: 5 } },
        browser: false,
      }),
    );
    expect(notifyOptionsFromFlags({ 'notify-config': good }, { [WEBHOOK_SECRET_VARIABLE]: SECRET })).toEqual({
      webhook: { url: 'https://hooks.example', rateLimit: { perMinute: 5 }, secret: SECRET },
      browser: false,
    });
    const broken = join(directory, 'broken.json');
    writeFileSync(broken, `{"webhook": {"secret": "${SECRET}"`);
    let message = '';
    try {
      notifyOptionsFromFlags({ 'notify-config': broken }, {});
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe(`\`--notify-config\` ${JSON.stringify(broken)} is not valid JSON`);
    expect(message).not.toContain(SECRET);
  });
});
