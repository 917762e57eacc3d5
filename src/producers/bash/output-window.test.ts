import { describe, expect, it } from 'vitest';
import { OutputWindow } from './output-window.js';

const text = (value: string) => Buffer.from(value, 'utf8');

describe('OutputWindow', () => {
  it('reads consuming deltas and counts every byte', () => {
    const window = new OutputWindow(64 * 1024);
    window.append(text('hello '), false);
    expect(window.read(100)).toMatchObject({ text: 'hello ', skippedBytes: 0, start: 0, end: 6 });
    window.append(text('world'), false);
    expect(window.read(100)).toMatchObject({ text: 'world', skippedBytes: 0 });
    expect(window.read(100).text).toBe('');
    expect(window.totalBytes).toBe(11);
  });

  it('gives a reader past the limit the newest bytes and what it skipped', () => {
    const window = new OutputWindow(64 * 1024);
    window.append(text('0123456789'), false);
    expect(window.read(4)).toMatchObject({ text: '6789', skippedBytes: 6 });
  });

  it('keeps only the newest capacity bytes, growing lazily', () => {
    const window = new OutputWindow(20_000);
    expect(window.allocatedBytes).toBe(0);
    window.append(text('a'.repeat(100)), false);
    expect(window.allocatedBytes).toBe(16 * 1024);
    for (let index = 0; index < 10; index += 1) window.append(text(String(index).repeat(3000)), false);
    expect(window.allocatedBytes).toBe(20_000);
    expect(window.retainedFrom).toBe(30_100 - 20_000);
    const read = window.read(1_000_000);
    expect(read.skippedBytes).toBe(10_100);
    expect(read.text).toHaveLength(20_000);
    expect(read.text.endsWith('9'.repeat(3000))).toBe(true);
  });

  it('keeps the last capacity bytes of a chunk larger than the ring', () => {
    const window = new OutputWindow(16 * 1024);
    window.append(text(`${'x'.repeat(20_000)}tail`), false);
    const read = window.read(1_000_000);
    expect(read.text.endsWith('tail')).toBe(true);
    expect(read.text).toHaveLength(16 * 1024);
    expect(read.skippedBytes).toBe(20_004 - 16 * 1024);
  });

  it('never starts a slice inside a character', () => {
    const window = new OutputWindow(64 * 1024);
    window.append(text('€€€'), false);
    // 9 bytes; the newest 4 start inside the second euro sign.
    expect(window.tail(4)).toMatchObject({ text: '€', skippedBytes: 6 });
    expect(window.read(7)).toMatchObject({ text: '€€', skippedBytes: 3 });
  });

  it('snapshots without consuming', () => {
    const window = new OutputWindow(64 * 1024);
    window.append(text('abc'), false);
    expect(window.tail(2).text).toBe('bc');
    expect(window.read(10).text).toBe('abc');
  });

  it('renders stderr lines with a prefix, on lines of their own', () => {
    const window = new OutputWindow(64 * 1024);
    window.append(text('compiling'), false);
    window.append(text('warning: a\nwarning: b\n'), true);
    window.append(text('done\n'), false);
    window.append(text('late'), true);
    expect(window.render(1000, '[stderr] ').text).toBe(
      'compiling\n[stderr] warning: a\n[stderr] warning: b\ndone\n[stderr] late',
    );
  });

  it('renders only the newest bytes, with stderr ranges cut to match', () => {
    const window = new OutputWindow(64 * 1024);
    window.append(text('out\n'), false);
    window.append(text('err1\nerr2\n'), true);
    const rendered = window.render(5, '! ');
    expect(rendered).toMatchObject({ text: '! err2\n', skippedBytes: 9 });
  });

  it('shrinks to the newest bytes after the command stopped', () => {
    const window = new OutputWindow(64 * 1024);
    window.append(text('x'.repeat(30_000)), false);
    window.append(text('end'), true);
    window.shrink(8192);
    expect(window.allocatedBytes).toBe(8192);
    expect(window.render(10, '#').text).toBe(`${'x'.repeat(7)}\n#end`);
    const read = window.read(100_000);
    expect(read.skippedBytes).toBe(30_003 - 8192);
  });
});
