import { describe, expect, it } from 'vitest';
import type { TaskOutputStream } from '../tasks/index.js';
import { fixedBytesStream } from './output-cursors.js';
import { readOutputPage } from './output-page.js';

const request = { position: 0, maxBytes: 1024, complete: false, alignStart: false };

describe('readOutputPage', () => {
  it('holds back a character cut at the end until the stream is complete', async () => {
    const stream = fixedBytesStream(Buffer.from([0x61, 0xe2, 0x82]));
    expect(await readOutputPage(stream, request)).toMatchObject({ text: 'a', from: 0, next: 1, end: 3 });
    const last = await readOutputPage(stream, { ...request, position: 1, complete: true });
    expect(last).toMatchObject({ text: '\ufffd', next: 3 });
  });

  it('cuts at the read limit on a character boundary', async () => {
    const stream = fixedBytesStream(Buffer.from('é中', 'utf8'));
    expect(await readOutputPage(stream, { ...request, maxBytes: 4 })).toMatchObject({ text: 'é', next: 2 });
  });

  it('moves on through bytes that are not UTF-8', async () => {
    const stream = fixedBytesStream(Buffer.from([0xff, 0xfe, 0x80, 0x41]));
    const page = await readOutputPage(stream, request);
    expect(page.next).toBe(4);
    expect(page.text.endsWith('A')).toBe(true);
  });

  it('skips the rest of a character a chosen offset starts inside', async () => {
    const stream = fixedBytesStream(Buffer.from('a😀b', 'utf8'));
    const page = await readOutputPage(stream, { ...request, position: 2, alignStart: true });
    expect(page).toMatchObject({ text: 'b', from: 5, next: 6, missedBytes: 0 });
  });

  it('marks bytes the stream no longer holds, naming where the full output is', async () => {
    const held = Buffer.from('newest');
    const stream: TaskOutputStream = {
      end: 100 + held.length,
      retainedFrom: 100,
      location: '/tmp/out.log',
      read: (offset, maxBytes) => ({
        from: offset,
        bytes: held.subarray(offset - 100, offset - 100 + maxBytes),
      }),
      onGrow: () => () => {},
    };
    const page = await readOutputPage(stream, { ...request, position: 40 });
    expect(page).toMatchObject({ from: 100, next: 106, missedBytes: 60 });
    expect(page.text).toBe('[... 60 bytes skipped; full output: /tmp/out.log ...]\nnewest');
  });

  it('counts a window that moved during the read as missed too', async () => {
    const stream: TaskOutputStream = {
      end: 20,
      retainedFrom: 0,
      read: () => ({ from: 15, bytes: Buffer.from('later') }),
      onGrow: () => () => {},
    };
    const page = await readOutputPage(stream, { ...request, position: 5 });
    expect(page).toMatchObject({
      from: 15,
      next: 20,
      missedBytes: 10,
      text: '[... 10 bytes skipped ...]\nlater',
    });
  });
});
