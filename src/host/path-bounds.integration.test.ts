/**
 * Path fields at the tool boundary, end to end with a real executor and a real SQLite store: a `workdir`
 * of 1 MiB is a clear `PATH_TOO_LONG` naming the field (nothing starts, no task), and one at the bound
 * that does not exist fails to start with `SPAWN_FAILED` and its record persists — nothing a tool accepts
 * fails to be stored.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger } from '../../test/fixtures/bash/index.js';
import { BashProducer } from '../producers/bash/bash-producer.js';
import { createBashTool } from '../producers/bash/bash-tool.js';
import { BashExecutor } from '../producers/bash/executor.js';
import { createTaskService } from '../registry/index.js';
import { openSqliteSessionStore, taskRecordFromSnapshot } from '../store/index.js';
import { createOwner, MAX_PATH_BYTES } from '../tasks/index.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('path fields at the tool boundary', () => {
  it('refuses a 1 MiB workdir by name; one at the bound fails to start and its record is stored', async () => {
    const home = mkdtempSync(join(tmpdir(), 'errand-paths-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const store = openSqliteSessionStore({ home });
    cleanups.push(() => store.close());
    const session = store.createSession({ id: 'paths', cwd: '/' });
    const owner = createOwner(session.id);
    const tasks = createTaskService({ logger: capturingLogger() });
    tasks.attachController('test', { owner });
    const executor = new BashExecutor({ logger: capturingLogger() });
    const producer = new BashProducer({ tasks, executor });
    const bash = createBashTool({ producer, spawnFailureWaitMs: 2000 });
    cleanups.push(
      () => tasks.dispose(),
      () => executor.dispose(),
      () => producer.dispose(),
    );
    const context = { caller: owner, toolCallId: 'call_1', signal: new AbortController().signal, cwd: '/' };

    const huge = await bash.execute({ command: 'true', workdir: 'd'.repeat(1024 * 1024) }, context);
    expect(huge.isError).toBe(true);
    expect(huge.text).toContain('PATH_TOO_LONG');
    expect(huge.text).toContain(
      `Expected \`workdir\` to be a path of at most ${MAX_PATH_BYTES} bytes, got 1048576 bytes`,
    );
    expect(tasks.list(owner)).toEqual([]);
    // Relative, short enough as given, too long once resolved against the session's directory.
    const resolved = await bash.execute(
      { command: 'true', workdir: 'x'.repeat(MAX_PATH_BYTES) },
      { ...context, cwd: '/tmp' },
    );
    expect(resolved.text).toContain('PATH_TOO_LONG');

    // At the bound: a path of 4095 bytes that does not exist (components under NAME_MAX).
    const segment = `/${'y'.repeat(254)}`;
    const atBound = segment.repeat(17).slice(0, MAX_PATH_BYTES);
    expect(Buffer.byteLength(atBound)).toBe(MAX_PATH_BYTES);
    const failed = await bash.execute({ command: 'true', workdir: atBound }, context);
    expect(failed.isError).toBe(true);
    expect(failed.text).toContain('SPAWN_FAILED');
    const [task] = tasks.list(owner);
    expect(task).toBeDefined();
    const stored = store.upsertTask(taskRecordFromSnapshot(tasks.get(task!.id, owner)));
    expect(stored.id).toBe(task!.id);
    expect(stored.status).toBe('failed');
  });
});
