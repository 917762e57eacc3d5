import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../tasks/index.js';
import { Lifeline } from './lifeline.js';
import { decodeMessage } from './lifeline-protocol.js';

/** A sidecar that only records what the runtime writes to its stdin, one entry per write. */
function fakeSidecar() {
  const writes: string[] = [];
  const stdout = new PassThrough();
  const events = new EventEmitter();
  const child = Object.assign(events, {
    pid: 4242,
    stdin: new Writable({
      write(chunk, _encoding, done) {
        writes.push(String(chunk));
        done();
      },
      // The release ends stdin: the sidecar stands down and exits.
      final(done) {
        done();
        setImmediate(() => events.emit('exit', 0, null));
      },
    }),
    stdout,
    channel: undefined,
    connected: true,
    exitCode: null,
    signalCode: null,
    unref() {},
  });
  const spawn = () => {
    setImmediate(() => stdout.write('{"type":"ready","version":1}\n'));
    return child as unknown as ChildProcess;
  };
  return { spawn, writes };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A lifeline whose fake sidecar said `ready`, with what it was written so far cleared. */
async function running() {
  const sidecar = fakeSidecar();
  const lifeline = new Lifeline({ spawn: sidecar.spawn, clock: createManualClock(), logger: { warn() {} } });
  await lifeline.ready;
  await turn();
  sidecar.writes.length = 0;
  return { sidecar, lifeline };
}

describe('Lifeline', () => {
  it('tells the sidecar once per turn of the event loop, after the turn, every tree started and stopped in it', async () => {
    const { sidecar, lifeline } = await running();
    const first = lifeline.watch({ pid: 101, startTime: 5 });
    lifeline.watch({ pid: 102, startTime: 6 });
    // A chain of promises (an ending told to its waiters, the next start) runs before the write.
    await Promise.resolve().then(() => first());
    expect(sidecar.writes).toEqual([]);
    await turn();
    expect(sidecar.writes).toHaveLength(1);
    const lines = sidecar.writes[0]!.trim().split('\n').map(decodeMessage);
    expect(lines.map((message) => message?.type)).toEqual(['watch', 'watch', 'unwatch']);
    await lifeline.release();
  });

  it('writes nothing for a tree the sidecar watches since its spawn, and tells it again after a restart', async () => {
    const { sidecar, lifeline } = await running();
    const current = lifeline.sidecar!;
    const key = lifeline.watchKey();
    const unwatch = lifeline.adopt(key, { pid: 101, startTime: 5 }, current);
    await turn();
    expect(sidecar.writes).toEqual([]);
    // Adopted for a sidecar that is no longer the one running: the one running is told.
    lifeline.adopt(lifeline.watchKey(), { pid: 102, startTime: 6 }, {} as ChildProcess);
    await turn();
    expect(sidecar.writes.flatMap((write) => write.trim().split('\n').map(decodeMessage))).toEqual([
      expect.objectContaining({ type: 'watch', pid: 102 }),
    ]);
    sidecar.writes.length = 0;
    // A sidecar that died is started again and told every tree, the adopted ones too.
    (current as unknown as EventEmitter).emit('exit', 1, null);
    await turn();
    const told = sidecar.writes.flatMap((write) => write.trim().split('\n').map(decodeMessage));
    expect(told).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'watch', key, pid: 101 }),
        expect.objectContaining({ type: 'watch', pid: 102 }),
      ]),
    );
    sidecar.writes.length = 0;
    unwatch();
    await turn();
    expect(sidecar.writes.map((write) => decodeMessage(write.trim()))).toEqual([{ type: 'unwatch', key }]);
    await lifeline.release();
  });
});
