/**
 * `errand mcp --max-tasks N` at a size past the runtime's defaults (1000 live tasks in the service, 1000
 * queued commands in the session): N real background commands are all admitted and alive at once, one
 * more is refused naming the limit, and when all N end together every ending is pushed to the client as
 * a logging message and then delivered in band exactly once. Meanwhile the server holds at most two
 * descriptors per live command (the pipes it reads; raw Node's `spawn` holds the same two).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, realpathSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type McpCli, notifiedTaskIds, startMcpCli, textBlocks } from '../../test/support/mcp-client.js';

const TASKS = 1500;
const directories: string[] = [];
const clis: McpCli[] = [];
const descriptors: number[] = [];

afterEach(async () => {
  for (const cli of clis.splice(0)) await cli.client.close();
  for (const fd of descriptors.splice(0)) closeSync(fd);
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(prefix: string): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  directories.push(directory);
  return directory;
}

describe('errand mcp with thousands of live tasks', () => {
  it(`admits ${TASKS} live commands with --max-tasks ${TASKS} and pushes and delivers every ending once`, async () => {
    const home = temporaryDirectory('errand-many-home-');
    const work = temporaryDirectory('errand-many-work-');
    const gate = join(work, 'gate');
    // Each command reads one byte from the gate; the test holds it open for writing, so none sees EOF and
    // the bytes written at the end release every command together, whenever it opened the gate.
    execFileSync('mkfifo', [gate]);
    const holder = openSync(gate, 'r+');
    descriptors.push(holder);

    const cli = await startMcpCli({ args: ['--home', home, '--cwd', work, '--max-tasks', String(TASKS)] });
    clis.push(cli);
    // One command through the whole path first, so what the server opens once is open before counting.
    await cli.call('bash', { command: 'echo warm' });
    const descriptorsBefore = readdirSync(`/proc/${cli.pid}/fd`).length;

    // Eight calls in flight at a time: the client's stdin writes stay under Node's listener warning.
    const started: Awaited<ReturnType<McpCli['call']>>[] = [];
    // Distinct commands: the duplicate guard answers an identical running one with its id.
    const startOne = (slot: number) =>
      cli.call('bash', { command: `read -r -N 1 _ < gate # ${slot}`, run_in_background: true });
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (started.length < TASKS) {
          const slot = started.length;
          started[slot] = undefined as never;
          started[slot] = await startOne(slot);
        }
      }),
    );
    const ids = started.map(
      (result) => /Started (bash-\d+) in the background/.exec(textBlocks(result)[0]!)?.[1],
    );
    expect(ids.filter((id) => id === undefined)).toEqual([]);
    expect(new Set(ids).size).toBe(TASKS);
    // Every command alive, each path shown: two descriptors per command at most (its stdout and stderr
    // pipes; no pidfd, and no output file held open while nothing is written).
    const perCommand = (readdirSync(`/proc/${cli.pid}/fd`).length - descriptorsBefore) / TASKS;
    expect(perCommand).toBeLessThanOrEqual(2);

    // None has ended (no byte was written): one more is refused, naming the per-session limit.
    const refused = await cli.call('bash', { command: 'true', run_in_background: true });
    expect(refused.isError).toBe(true);
    expect(textBlocks(refused).join('\n')).toContain('ADMISSION_LIMIT');
    expect(textBlocks(refused).join('\n')).toContain('tasks.maxLiveTasksPerOwner');

    writeSync(holder, Buffer.alloc(TASKS, 'x'));

    // Every ending is pushed at once as a logging message, however many end together.
    const pushed = new Set<string>();
    await cli.waitForLog(() => {
      pushed.clear();
      for (const log of cli.logs) {
        const taskId = (log.data as { taskId?: string } | undefined)?.taskId;
        if (taskId) pushed.add(taskId);
      }
      return pushed.size >= TASKS;
    });
    expect([...pushed].sort()).toEqual([...ids].sort());

    // And every one is delivered in band exactly once, on the tool results that follow.
    const delivered: string[] = [];
    for (const result of started) delivered.push(...textBlocks(result).slice(1).flatMap(notifiedTaskIds));
    delivered.push(...textBlocks(refused).slice(1).flatMap(notifiedTaskIds));
    for (let call = 0; delivered.length < TASKS && call < TASKS; call += 1) {
      const result = await cli.call('task_list');
      delivered.push(...textBlocks(result).slice(1).flatMap(notifiedTaskIds));
    }
    expect(delivered.length).toBe(TASKS);
    expect(new Set(delivered).size).toBe(TASKS);
    expect(cli.stderr.text).not.toContain('QUEUE_FULL');
  }, 240_000);
});
