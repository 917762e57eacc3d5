/**
 * Which servers a hook serves: the rule that ties a hook to the `errand mcp` of its own client, checked
 * on fixed process trees — a shell between client and hook, several servers of one client, another
 * client's server under the same shell, a reused pid.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessEntry, ProcessSource } from '../process/index.js';
import {
  ancestorsOf,
  clientOf,
  listLiveServers,
  SERVER_RECORD_SCHEMA_VERSION,
  type ServerRecord,
  serversOfClient,
  writeServerRecord,
} from './server-registry.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A fixed process table: pid → [ppid, start time]. */
function table(entries: Record<number, [number, number]>): ProcessSource {
  return {
    listPids: () => Object.keys(entries).map(Number),
    read: (pid) => {
      const entry = entries[pid];
      if (!entry) return undefined;
      const [ppid, startTime] = entry;
      return { pid, ppid, pgid: pid, sid: pid, state: 'S', startTime } satisfies ProcessEntry;
    },
    environmentValue: () => undefined,
    lastPid: () => undefined,
    clockTicks: () => 0,
  };
}

function record(server: [number, number], client: [number, number], startedAt = 1): ServerRecord {
  return {
    schemaVersion: SERVER_RECORD_SCHEMA_VERSION,
    server: { pid: server[0], startTime: server[1] },
    client: { pid: client[0], startTime: client[1] },
    sessionId: `session-${server[0]}`,
    socket: `/tmp/mcp-${server[0]}.sock`,
    startedAt,
  };
}

describe('serversOfClient', () => {
  // 10: a terminal shell running two clients, 20 (with Errand) and 30 (without).
  // 21, 22: errand mcp of client 20; 25: a hook of client 20 through `sh -c`, 26; 35: a hook of client 30.
  const processes = table({
    10: [1, 100],
    20: [10, 200],
    21: [20, 210],
    22: [20, 220],
    25: [20, 250],
    26: [25, 260],
    30: [10, 300],
    35: [30, 350],
  });
  const servers = [record([21, 210], [20, 200], 1), record([22, 220], [20, 200], 2)];

  it('finds every server of the client, through a shell in between, oldest first', () => {
    const ancestors = ancestorsOf(26, processes);
    expect(ancestors.map((ancestor) => ancestor.pid)).toEqual([25, 20, 10]);
    expect(serversOfClient(servers, ancestors).map((server) => server.server.pid)).toEqual([21, 22]);
  });

  it("matches nothing for a client without Errand, though another client's server runs under the same shell", () => {
    expect(serversOfClient(servers, ancestorsOf(35, processes))).toEqual([]);
  });

  it('does not take a reused pid for the client', () => {
    const reused = [record([21, 210], [20, 199])];
    expect(serversOfClient(reused, ancestorsOf(26, processes))).toEqual([]);
  });
});

describe('clientOf', () => {
  // 100: the client; 110 `npx errand mcp` (node npx-cli.js), 111 `sh -c errand mcp`, 112: errand mcp.
  const processes = table({ 100: [1, 10], 110: [100, 11], 111: [110, 12], 112: [111, 13], 120: [100, 14] });
  const commandLines: Record<number, string[]> = {
    100: ['/usr/local/bin/claude'],
    110: ['/usr/bin/node', '/usr/lib/node_modules/npm/bin/npx-cli.js', 'errand', 'mcp'],
    111: ['/bin/sh', '-c', 'errand mcp'],
    112: ['/usr/bin/node', '/project/node_modules/.bin/errand', 'mcp'],
    120: ['/usr/bin/node', '/opt/errand/dist/cli/main.js', 'mcp'],
  };
  const read = (pid: number) => commandLines[pid];

  it('is the parent of a server the client started directly', () => {
    expect(clientOf(120, processes, read)).toEqual({ pid: 100, startTime: 10 });
  });

  it('skips the launchers a client started the server through (npx, sh -c)', () => {
    expect(clientOf(112, processes, read)).toEqual({ pid: 100, startTime: 10 });
  });
});

describe('listLiveServers', () => {
  it('keeps the records of live servers and removes those of dead ones', () => {
    const home = mkdtempSync(join(tmpdir(), 'errand-reg-'));
    directories.push(home);
    writeServerRecord(home, record([21, 210], [20, 200], 2));
    writeServerRecord(home, record([40, 400], [20, 200], 1));
    writeServerRecord(home, record([22, 999], [20, 200], 3));
    const live = listLiveServers(home, { source: table({ 20: [1, 200], 21: [20, 210], 22: [20, 220] }) });
    expect(live.map((server) => server.server.pid)).toEqual([21]);
    expect(readdirSync(join(home, 'run')).sort()).toEqual(['mcp-21.json']);
  });
});
