import { describe, expect, it } from 'vitest';
import { decodeMessage, encodeMessage, readWatch } from './lifeline-protocol.js';

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

  it('reads a ping and a pong with their sequence numbers', () => {
    expect(decodeMessage(encodeMessage({ type: 'ping', seq: 7 }).trim())).toEqual({ type: 'ping', seq: 7 });
    expect(decodeMessage(encodeMessage({ type: 'pong', seq: 7 }).trim())).toEqual({ type: 'pong', seq: 7 });
  });
});
