import { describe, expect, it } from 'vitest';
import { decodeMessage, encodeMessage, readSpawn, readWatch } from './lifeline-protocol.js';

describe('the lifeline protocol', () => {
  it('is one JSON object per line with a type; anything else is no message', () => {
    const line = encodeMessage({ type: 'watch', key: 't1', pid: 42, startTime: 7, tag: 'T=1' });
    expect(line.endsWith('\n')).toBe(true);
    expect(decodeMessage(line.trim())).toEqual({
      type: 'watch',
      key: 't1',
      pid: 42,
      startTime: 7,
      tag: 'T=1',
    });
    for (const text of ['', 'nope', '[1]', '{"kind":"watch"}', '{"type":3}'])
      expect(decodeMessage(text)).toBeUndefined();
    // A type this side does not know still decodes: the receiver answers `error` and carries on.
    expect(decodeMessage('{"type":"spawn","file":"/bin/true"}')?.type).toBe('spawn');
  });

  it('checks a watch message field by field', () => {
    const good = { type: 'watch', key: 'k', pid: 42, startTime: 0 };
    expect(readWatch(good)).toEqual({ ...good, tag: undefined, statusFile: undefined });
    for (const bad of [
      { ...good, key: '' },
      { ...good, pid: 1 },
      { ...good, pid: 4.5 },
      { ...good, startTime: -1 },
      { ...good, tag: 'no-equals' },
      { ...good, statusFile: '' },
    ]) {
      expect(readWatch(bad)).toBeUndefined();
    }
  });
  it('checks a spawn request, and the tree it asks to watch as a watch message is checked', () => {
    const spawn = {
      type: 'spawn',
      id: 3,
      file: '/bin/bash',
      args: ['-c', 'true'],
      cwd: '/',
      env: { A: '1' },
    };
    expect(readSpawn(spawn)).toEqual(spawn);
    const watch = { key: 't9', startTime: 12, tag: 'T=1', statusFile: '/tmp/x.status' };
    expect(readSpawn({ ...spawn, watch })).toEqual({ ...spawn, watch });
    expect(readSpawn({ ...spawn, watch: { key: 't9', startTime: 12 } })?.watch).toEqual({
      key: 't9',
      startTime: 12,
      tag: undefined,
      statusFile: undefined,
    });
    for (const bad of [
      null,
      'x',
      { startTime: 12 },
      { key: 't9', startTime: -1 },
      { ...watch, tag: 'no-equals' },
    ]) {
      expect(readSpawn({ ...spawn, watch: bad })).toBeUndefined();
    }
    expect(readSpawn({ ...spawn, env: { A: 1 } })).toBeUndefined();
  });

  it('checks the shared pipes a spawn request names: a pid above 1, descriptors, decimal inodes', () => {
    const spawn = { type: 'spawn', id: 4, file: '/bin/true', args: [], cwd: '/', env: {} };
    const stdio = { pid: 4242, stdout: { fd: 21, ino: '90210' }, stderr: { fd: 22, ino: '90211' } };
    expect(readSpawn({ ...spawn, stdio })).toEqual({ ...spawn, stdio });
    for (const bad of [
      null,
      'pipes',
      { ...stdio, pid: 1 },
      { ...stdio, pid: 1.5 },
      { ...stdio, stdout: undefined },
      { ...stdio, stderr: { fd: -1, ino: '3' } },
      { ...stdio, stdout: { fd: 21, ino: 90210 } },
      { ...stdio, stdout: { fd: 21, ino: '9e3' } },
      { ...stdio, stdout: { fd: 21, ino: '' } },
    ]) {
      expect(readSpawn({ ...spawn, stdio: bad })).toBeUndefined();
    }
  });
});
