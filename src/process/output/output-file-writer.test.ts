/** The output-file writer: its cap, its lazy creation, and its backpressure against a "disk" (a FIFO) that drains only when the test lets it. */
import { spawnSync } from 'node:child_process';
import {
  constants,
  createReadStream,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OutputDirectory } from './output-directory.js';
import { type OpenOutputFile, OutputFileWriter } from './output-file-writer.js';

let directory: string;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'errand-writer-'));
});

afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

/** Hands the writer `fd` when it asks to create its file. */
function openedAs(fd: number): OpenOutputFile {
  return (_path, callback) => callback(null, fd);
}

const UNCAPPED = 1024 ** 3;

describe('OutputFileWriter backpressure', () => {
  it('is blocked at the high-water mark and drains at a quarter of it', async () => {
    const fifo = join(directory, 'slow-disk');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    // O_RDWR: opening does not wait for a reader, and writes block once the pipe is full.
    const fd = openSync(fifo, constants.O_RDWR);
    const errors: Error[] = [];
    const writer = new OutputFileWriter(fifo, openedAs(fd), {
      maxBytes: UNCAPPED,
      highWaterMarkBytes: 256 * 1024,
      onError: (error) => void errors.push(error),
    });
    expect(await writer.open()).toBe(true);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let accepted = 0;
    while (!writer.blocked) {
      expect(writer.write(chunk)).toBe(chunk.length);
      accepted += 1;
    }
    // Nothing drains the FIFO yet: the queue holds at most the mark plus one chunk.
    expect(writer.queuedBytes).toBeLessThanOrEqual(256 * 1024 + chunk.length);
    expect(accepted).toBeLessThan(16);
    const drained = new Promise<void>((resolve) => writer.onDrain(resolve));
    const reader = createReadStream(fifo);
    let received = 0;
    reader.on('data', (data) => {
      received += data.length;
    });
    await drained;
    expect(writer.blocked).toBe(false);
    expect(writer.queuedBytes).toBeLessThanOrEqual(64 * 1024);
    await writer.close();
    await new Promise<void>((resolve) => {
      if (received >= accepted * chunk.length) resolve();
      else reader.on('data', () => received >= accepted * chunk.length && resolve());
    });
    reader.destroy();
    expect(received).toBe(accepted * chunk.length);
    expect(writer.bytes).toBe(accepted * chunk.length);
    expect(errors).toEqual([]);
  });

  it('reports progress after each completed write', async () => {
    const path = join(directory, 'out.log');
    const writer = new OutputFileWriter(path, openedAs(openSync(path, 'w')), {
      maxBytes: UNCAPPED,
      highWaterMarkBytes: 1024,
    });
    let progress = 0;
    const unsubscribe = writer.onProgress(() => {
      progress += 1;
    });
    writer.write(Buffer.from('one'));
    await new Promise<void>((resolve) => writer.onProgress(resolve));
    expect(progress).toBe(1);
    unsubscribe();
    writer.write(Buffer.from('two'));
    await writer.close();
    expect(progress).toBe(1);
    expect(readFileSync(path, 'utf8')).toBe('onetwo');
  });
});

describe('OutputFileWriter creation', () => {
  it('queues output until the file is open, then writes all of it', async () => {
    const path = join(directory, 'out.log');
    let hand: (() => void) | undefined;
    const writer = new OutputFileWriter(
      path,
      (_path, callback) => {
        hand = () => callback(null, openSync(path, 'w'));
      },
      { maxBytes: UNCAPPED, highWaterMarkBytes: 1024 * 1024 },
    );
    writer.write(Buffer.from('before open, '));
    expect(writer.opened).toBe(false);
    const closing = writer.close();
    hand!();
    await closing;
    expect(readFileSync(path, 'utf8')).toBe('before open, ');
  });

  it('creates no file for a silent stream, and none once closed', async () => {
    const files = new OutputDirectory('errand-test-', directory);
    const writer = files.newFile({ maxBytes: UNCAPPED, highWaterMarkBytes: 1024 });
    await writer.close();
    expect(existsSync(writer.path)).toBe(false);
    expect(await writer.open()).toBe(false);
    expect(writer.write(Buffer.from('late'))).toBe(0);
    expect(existsSync(writer.path)).toBe(false);
  });

  it('creates its file exclusively, mode 0600 in a 0700 directory, on the first write or on open()', async () => {
    const files = new OutputDirectory('errand-test-', directory);
    const written = files.newFile({ maxBytes: UNCAPPED, highWaterMarkBytes: 1024 });
    let opened = 0;
    const shown = files.newFile({
      maxBytes: UNCAPPED,
      highWaterMarkBytes: 1024,
      onOpen: () => void opened++,
    });
    expect(files.path).toBeDefined();
    expect(existsSync(written.path)).toBe(false);
    written.write(Buffer.from('x'));
    expect(await shown.open()).toBe(true);
    expect(await shown.open()).toBe(true);
    expect(opened).toBe(1);
    await Promise.all([written.close(), shown.close()]);
    expect(readFileSync(written.path, 'utf8')).toBe('x');
    expect(statSync(shown.path).size).toBe(0);
    expect(statSync(shown.path).mode & 0o777).toBe(0o600);
    expect(statSync(files.path!).mode & 0o777).toBe(0o700);
    files.dispose(false);
    expect(existsSync(files.path!)).toBe(false);
    expect(() => files.newPath()).toThrow('the output directory was removed');
  });

  it('holds a descriptor of its file only while something waits to be written, and appends after it', async () => {
    const files = new OutputDirectory('errand-test-', directory);
    const descriptors = () => readdirSync('/proc/self/fd').length;
    const before = descriptors();
    const writers = Array.from({ length: 20 }, () =>
      files.newFile({ maxBytes: UNCAPPED, highWaterMarkBytes: 1024 * 1024 }),
    );
    // Shown (created) and written: each file exists, none holds a descriptor once its queue is on the disk.
    for (const writer of writers.slice(0, 10)) expect(await writer.open()).toBe(true);
    const written = writers.slice(10).map((writer) => {
      writer.write(Buffer.from('first '));
      return new Promise<void>((resolve) => {
        const stop = writer.onProgress(() => {
          stop();
          resolve();
        });
      });
    });
    await Promise.all(written);
    expect(writers.every((writer) => writer.opened && !writer.holdsDescriptor)).toBe(true);
    expect(descriptors()).toBe(before);
    // The next write opens the file again and appends; close() waits for it.
    for (const writer of writers) writer.write(Buffer.from('second'));
    await Promise.all(writers.map((writer) => writer.close()));
    expect(readFileSync(writers[0]!.path, 'utf8')).toBe('second');
    expect(readFileSync(writers[19]!.path, 'utf8')).toBe('first second');
    expect(descriptors()).toBe(before);
  });

  it('reports a file that vanished before it was opened again as a write error', async () => {
    const files = new OutputDirectory('errand-test-', directory);
    const errors: Array<[string, boolean]> = [];
    const writer = files.newFile({
      maxBytes: UNCAPPED,
      highWaterMarkBytes: 1024,
      onError: (error, whileOpening) =>
        void errors.push([(error as NodeJS.ErrnoException).code!, whileOpening]),
    });
    expect(await writer.open()).toBe(true);
    files.removeFile(writer.path);
    expect(writer.write(Buffer.from('lost'))).toBe(4);
    await writer.close();
    expect(errors).toEqual([['ENOENT', false]]);
    expect(existsSync(writer.path)).toBe(false);
  });

  it('reports a file that cannot be created and drops its output without stalling anyone', async () => {
    const errors: Array<[string, boolean]> = [];
    let refuse: (() => void) | undefined;
    const writer = new OutputFileWriter(
      join(directory, 'never'),
      (_path, callback) => {
        refuse = () =>
          callback(Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' }), -1);
      },
      {
        maxBytes: UNCAPPED,
        highWaterMarkBytes: 1024,
        onError: (error, whileOpening) => void errors.push([error.message, whileOpening]),
      },
    );
    expect(writer.write(Buffer.alloc(4096))).toBe(4096);
    expect(writer.blocked).toBe(true);
    const drained = new Promise<void>((resolve) => writer.onDrain(resolve));
    const opened = writer.open();
    refuse!();
    await drained;
    expect(await opened).toBe(false);
    await writer.close();
    expect(errors).toEqual([['EACCES: permission denied', true]]);
    expect(writer.error?.message).toBe('EACCES: permission denied');
  });

  it('keeps counting against the cap after a write error', async () => {
    const path = join(directory, 'read-only');
    // A descriptor open for reading only: every write fails with EBADF.
    let failed!: () => void;
    const failure = new Promise<void>((resolve) => {
      failed = resolve;
    });
    const writer = new OutputFileWriter(path, openedAs(openSync('/dev/null', 'r')), {
      maxBytes: 10,
      highWaterMarkBytes: 1024,
      onError: (_error, whileOpening) => {
        expect(whileOpening).toBe(false);
        failed();
      },
    });
    writer.write(Buffer.from('12345'));
    await failure;
    expect(writer.error).toMatchObject({ code: 'EBADF' });
    expect(writer.write(Buffer.from('67890'))).toBe(5);
    expect(writer.full).toBe(false);
    expect(writer.write(Buffer.from('!'))).toBe(0);
    expect(writer.full).toBe(true);
    expect(writer.bytes).toBe(10);
    await writer.close();
  });
});

describe('OutputFileWriter cap', () => {
  it('takes exactly the cap, drops the rest and says it is full', async () => {
    const path = join(directory, 'capped.log');
    const writer = new OutputFileWriter(path, openedAs(openSync(path, 'w')), {
      maxBytes: 10,
      highWaterMarkBytes: 1024,
    });
    expect(writer.write(Buffer.from('01234'))).toBe(5);
    expect(writer.write(Buffer.from('56789'))).toBe(5);
    // Reaching the cap exactly drops nothing.
    expect(writer.full).toBe(false);
    expect(writer.write(Buffer.from('abc'))).toBe(0);
    expect(writer.full).toBe(true);
    expect(writer.write(Buffer.from('d'))).toBe(0);
    await writer.close();
    expect(readFileSync(path, 'latin1')).toBe('0123456789');
    expect(writer.bytes).toBe(10);
  });

  it('cuts where `cutAt` allows, so a character is never split at the cap', async () => {
    const path = join(directory, 'utf8.log');
    // Cut only before a UTF-8 lead byte: the longest prefix that ends on a character boundary.
    const cutAt = (chunk: Uint8Array, limit: number) => {
      let end = limit;
      while (end > 0 && end < chunk.length && (chunk[end]! & 0xc0) === 0x80) end -= 1;
      return end;
    };
    const writer = new OutputFileWriter(path, openedAs(openSync(path, 'w')), {
      maxBytes: 4,
      highWaterMarkBytes: 1024,
      cutAt,
    });
    // 'aé€' is 1 + 2 + 3 bytes: a cut at 4 would split the euro sign.
    expect(writer.write(Buffer.from('aé€'))).toBe(3);
    expect(writer.full).toBe(true);
    await writer.close();
    expect(readFileSync(path, 'utf8')).toBe('aé');
  });
});
