/**
 * `errand mcp` against faults of its own processes, driven by the official MCP client over stdio with
 * real commands: SIGKILL of the server in the middle of a burst of 100 background starts leaves no
 * command alive 2 s later (ten runs); with its lifeline sidecar stopped (SIGSTOP) every call is still
 * answered, foreground ones included; and a start made while the sidecar is stopped, followed by the
 * server's SIGKILL, is still stopped once the sidecar continues. Processes are counted through /proc by
 * a marker only this test's server and commands carry.
 */
import { readFileSync } from 'node:fs';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CRASH_MARK_VARIABLE,
  killMarked,
  markedPids,
  newMark,
  survivorsAfter,
} from '../../test/support/crash.js';
import { type McpCli, startMcpCli, textBlocks } from '../../test/support/mcp-client.js';

const marks: string[] = [];
const stopped = new Set<number>();

afterEach(() => {
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // Gone already.
    }
  }
  stopped.clear();
  for (const mark of marks.splice(0)) killMarked(mark);
});

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The server's lifeline sidecar: its marked child running the sidecar script. */
function sidecarOf(server: McpCli, mark: string): number | undefined {
  return markedPids(mark).find((pid) => {
    try {
      return (
        parentOf(pid) === server.pid &&
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('lifeline-sidecar')
      );
    } catch {
      return false;
    }
  });
}

async function server(mark: string): Promise<McpCli> {
  return startMcpCli({ args: ['--max-tasks', '200'], env: { [CRASH_MARK_VARIABLE]: mark } });
}

async function until<T>(probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error('not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('errand mcp under faults of its own processes', () => {
  it('SIGKILLed during 100 background starts: no command is alive 2 s later, in 10 of 10 runs', async () => {
    const survivorsPerRun: number[] = [];
    for (let run = 0; run < 10; run += 1) {
      const mark = newMark();
      marks.push(mark);
      const mcp = await server(mark);
      await until(() => sidecarOf(mcp, mark));
      let answered = 0;
      const killAfter = 10 + ((run * 7) % 50);
      // A loaded machine may take long to answer 100 starts at once: no client timeout decides the test.
      const calls = Array.from({ length: 100 }, (_, index) =>
        mcp.client
          .callTool(
            { name: 'bash', arguments: { command: `exec sleep 1000 # ${index}`, run_in_background: true } },
            CallToolResultSchema,
            { timeout: 240_000 },
          )
          .then(() => {
            answered += 1;
            if (answered === killAfter) process.kill(mcp.pid, 'SIGKILL');
          })
          .catch(() => {}),
      );
      await until(() => (answered >= killAfter ? true : undefined), 240_000);
      const killedAt = performance.now();
      await mcp.exited;
      await Promise.all(calls);
      const { survivors } = await survivorsAfter(mark, killedAt, 2000);
      survivorsPerRun.push(survivors.length);
      killMarked(mark);
    }
    expect(survivorsPerRun).toEqual(Array(10).fill(0));
  }, 900_000);

  it('with its sidecar stopped, every call is answered, and a start made then is stopped once the server dies', async () => {
    const mark = newMark();
    marks.push(mark);
    const mcp = await server(mark);
    const sidecar = await until(() => sidecarOf(mcp, mark));
    stopped.add(sidecar);
    process.kill(sidecar, 'SIGSTOP');
    const foreground = await mcp.call('bash', { command: 'echo hi' });
    expect(textBlocks(foreground).join('\n')).toContain('hi');
    const background = await mcp.call('bash', { command: 'exec sleep 1000', run_in_background: true });
    expect(textBlocks(background).join('\n')).toMatch(/bash-\d+/);
    const list = await mcp.call('task_list', {});
    expect(textBlocks(list).join('\n')).toMatch(/running/);
    // The server dies while the sidecar is stopped; once it continues, it stops what the server started.
    process.kill(mcp.pid, 'SIGKILL');
    await mcp.exited;
    process.kill(sidecar, 'SIGCONT');
    stopped.delete(sidecar);
    const { survivors } = await survivorsAfter(mark, performance.now(), 5000);
    expect(survivors).toEqual([]);
  }, 60_000);
});
