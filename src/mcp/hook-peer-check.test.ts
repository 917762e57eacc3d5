/** The hook socket's peer rules on stated process facts, and the pairing of inodes in `ss -x` output. */
import { describe, expect, it } from 'vitest';
import { peerInodeIn, procfsSource } from '../process/index.js';
import { refusalOf } from './hook-peer-check.js';

const self = procfsSource().read(process.pid)!;
const client = { pid: 4242, startTime: 77 };
const hook = {
  pid: 5000,
  uid: process.getuid?.(),
  sameNamespaces: true,
  ancestors: [{ pid: 4300, startTime: 90 }, client],
  variables: new Set(['PATH', 'HOME']),
};

describe('refusalOf', () => {
  it("serves the registered client's own processes", () => {
    expect(refusalOf(hook, { client })).toBeUndefined();
    expect(refusalOf({ ...hook, pid: client.pid, ancestors: [] }, { client })).toBeUndefined();
    expect(refusalOf({ ...hook, ancestors: [] }, {})).toBeUndefined();
  });

  it("refuses another user, another namespace, the server's own commands, tagged ones and strangers", () => {
    expect(refusalOf({ ...hook, uid: 12345 }, { client })).toMatch(/another user/);
    expect(refusalOf({ ...hook, sameNamespaces: false }, { client })).toMatch(
      /another pid or user namespace/,
    );
    const ours = { ...hook, ancestors: [{ pid: process.pid, startTime: self.startTime }, client] };
    expect(refusalOf(ours, { client })).toMatch(/started by this server/);
    const tagged = { ...hook, variables: new Set(['PATH', 'ERRAND_PROCESS_TAG']) };
    expect(refusalOf(tagged, { client })).toMatch(/carries ERRAND_PROCESS_TAG/);
    // Same pid, another start time: not the client (a reused pid).
    const stranger = { ...hook, ancestors: [{ pid: client.pid, startTime: 1 }] };
    expect(refusalOf(stranger, { client })).toMatch(/not a process of the registered client/);
  });
});

describe('peerInodeIn', () => {
  it('finds the peer of a local inode, paths with spaces included', () => {
    const listing = [
      'u_str ESTAB 0 0 /run/user/1000/bus 31337 * 31338',
      'u_str ESTAB 0 0 /home/a b/.errand/run/mcp-1.sock 5550 * 5551',
      'u_str ESTAB 0 0 * 5551 * 5550',
    ].join('\n');
    expect(peerInodeIn(listing, '5550')).toBe('5551');
    expect(peerInodeIn(listing, '5551')).toBe('5550');
    expect(peerInodeIn(listing, '999')).toBeUndefined();
  });
});
