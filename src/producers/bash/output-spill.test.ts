/** The spill file's backpressure, against a "disk" (a FIFO) that drains only when the test lets it. */
import { spawnSync } from 'node:child_process';
import {
  constants,
  createReadStream,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OutputSpill } from './output-spill.js';

let directory: string;

afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

describe('OutputSpill', () => {
  it('reports backpressure at the high-water mark and resumes at a quarter of it', async () => {
    directory = mkdtempSync(join(tmpdir(), 'errand-spill-'));
    const fifo = join(directory, 'slow-disk');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // O_RDWR: opening does not wait for a reader, and writes block once the pipe is full.
    const fd = openSync(fifo, constants.O_RDWR);
    const errors: Error[] = [];
    const spill = new OutputSpill(fifo, 256 * 1024, (error) => void errors.push(error));
    spill.attach(fd);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let accepted = 0;
    while (spill.write(chunk)) accepted += 1;
    accepted += 1;
    // Nothing drains the FIFO yet: the queue holds at most the mark plus one chunk.
    expect(spill.queuedBytes).toBeLessThanOrEqual(256 * 1024 + chunk.length);
    expect(accepted).toBeLessThan(16);
    const drained = new Promise<void>((resolve) => spill.onDrain(resolve));
    const reader = createReadStream(fifo);
    let received = 0;
    reader.on('data', (data) => {
      received += data.length;
    });
    await drained;
    expect(spill.queuedBytes).toBeLessThanOrEqual(64 * 1024);
    await spill.close();
    await new Promise<void>((resolve) => {
      if (received >= accepted * chunk.length) resolve();
      else reader.on('data', () => received >= accepted * chunk.length && resolve());
    });
    reader.destroy();
    expect(received).toBe(accepted * chunk.length);
    expect(errors).toEqual([]);
  });

  it('queues output until the file is open, then writes all of it', async () => {
    directory = mkdtempSync(join(tmpdir(), 'errand-spill-'));
    const path = join(directory, 'out.log');
    writeFileSync(path, '');
    const spill = new OutputSpill(path, 1024 * 1024, () => {});
    spill.write(Buffer.from('before open, '));
    const closing = spill.close();
    spill.attach(openSync(path, 'w'));
    await closing;
    expect(readFileSync(path, 'utf8')).toBe('before open, ');
  });

  it('reports a file that cannot be opened and drops its output without stalling anyone', async () => {
    directory = mkdtempSync(join(tmpdir(), 'errand-spill-'));
    const errors: Error[] = [];
    const spill = new OutputSpill(join(directory, 'never'), 1024, (error) => void errors.push(error));
    expect(spill.write(Buffer.alloc(4096))).toBe(false);
    const drained = new Promise<void>((resolve) => spill.onDrain(resolve));
    spill.failToOpen(Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' }));
    await drained;
    await spill.close();
    expect(errors).toHaveLength(1);
    expect(spill.write(Buffer.alloc(10))).toBe(true);
  });
});
