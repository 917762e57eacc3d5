import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OutputDirectory } from './output-directory.js';
import { outputFileStream, readFileRange } from './output-file-stream.js';

const directories: OutputDirectory[] = [];
const scratch: string[] = [];

afterEach(() => {
  for (const directory of directories.splice(0)) directory.dispose(false);
  for (const path of scratch.splice(0)) rmSync(path, { recursive: true, force: true });
});

describe('an output file as a byte stream', () => {
  it('reads only what completed writes put in the file, and tells readers when it grew', async () => {
    const directory = new OutputDirectory('errand-stream-test-');
    directories.push(directory);
    const writer = directory.newFile({ maxBytes: 1000, highWaterMarkBytes: 1 << 20 });
    const stream = outputFileStream(writer);
    expect(stream.end).toBe(0);
    expect(stream.location).toBe(writer.path);
    expect(await stream.read(0, 10)).toEqual({ from: 0, bytes: new Uint8Array(0) });
    const grown = new Promise<void>((resolve) => {
      const stop = stream.onGrow(() => {
        stop();
        resolve();
      });
    });
    writer.write(Buffer.from('hello, '));
    writer.write(Buffer.from('world'));
    await grown;
    await writer.close();
    expect(stream.end).toBe(12);
    expect(Buffer.from((await stream.read(7, 100)).bytes).toString()).toBe('world');
    expect(Buffer.from((await stream.read(0, 5)).bytes).toString()).toBe('hello');
  });

  it('answers no bytes for a missing file, a directory, or an offset past the end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'errand-range-'));
    scratch.push(dir);
    const file = join(dir, 'out.log');
    expect((await readFileRange(file, 0, 10)).length).toBe(0);
    expect((await readFileRange(dir, 0, 10)).length).toBe(0);
    writeFileSync(file, 'abc');
    expect((await readFileRange(file, 5, 10)).length).toBe(0);
    expect(Buffer.from(await readFileRange(file, 1, 10)).toString()).toBe('bc');
  });
});
