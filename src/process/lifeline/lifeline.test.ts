import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../tasks/index.js';
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
  const kills: string[] = [];
  let spawns = 0;
  Object.assign(child, {
    kill(signal: string) {
      kills.push(signal);
      setImmediate(() => events.emit('exit', null, signal));
      return true;
    },
  });
  const spawn = () => {
    spawns += 1;
    setImmediate(() => stdout.write('{"type":"ready","version":2}\n'));
    return child as unknown as ChildProcess;
  };
  const answer = (message: object) => stdout.write(`${JSON.stringify(message)}\n`);
  return {
    spawn,
    writes,
    kills,
    answer,
    get spawns() {
      return spawns;
    },
  };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A lifeline whose fake sidecar said `ready`, with what it was written so far cleared. */
async function running() {
  const sidecar = fakeSidecar();
  const clock = createManualClock();
  const lifeline = new Lifeline({ spawn: sidecar.spawn, clock, logger: { warn() {} } });
  await lifeline.ready;
  await turn();
  sidecar.writes.length = 0;
  return { sidecar, lifeline, clock };
}

describe('Lifeline', () => {
  it('tells the sidecar in one write, within 10 ms of the first, every tree started and stopped meanwhile', async () => {
    const { sidecar, lifeline, clock } = await running();
    const first = lifeline.watch({ pid: 101, startTime: 5 });
    lifeline.watch({ pid: 102, startTime: 6 });
    // A chain of promises (an ending told to its waiters, the next start) runs before the write.
    await Promise.resolve().then(() => first());
    await turn();
    // A burst of starts wakes the sidecar once: nothing is written before the watch's 10 ms.
    expect(sidecar.writes).toEqual([]);
    clock.advance(9);
    await turn();
    expect(sidecar.writes).toEqual([]);
    clock.advance(1);
    await turn();
    expect(sidecar.writes).toHaveLength(1);
    const lines = sidecar.writes[0]!.trim().split('\n').map(decodeMessage);
    expect(lines.map((message) => message?.type)).toEqual(['watch', 'watch', 'unwatch']);
    await lifeline.release();
  });

  it('tells an unwatch alone within 50 ms rather than at the ending, and with the next watch sooner', async () => {
    const sidecar = fakeSidecar();
    const clock = createManualClock();
    const lifeline = new Lifeline({ spawn: sidecar.spawn, clock, logger: { warn() {} } });
    await lifeline.ready;
    await turn();
    const stop = lifeline.watch({ pid: 101, startTime: 5 });
    clock.advance(10);
    await turn();
    sidecar.writes.length = 0;
    stop();
    await turn();
    // The ending's turn wakes no sidecar.
    expect(sidecar.writes).toEqual([]);
    clock.advance(49);
    await turn();
    expect(sidecar.writes).toEqual([]);
    clock.advance(1);
    await turn();
    expect(sidecar.writes.map((write) => decodeMessage(write.trim())?.type)).toEqual(['unwatch']);
    // A watch in the meantime takes the waiting unwatch with it, within its own 10 ms.
    const next = lifeline.watch({ pid: 102, startTime: 6 });
    next();
    lifeline.watch({ pid: 103, startTime: 7 });
    sidecar.writes.length = 0;
    clock.advance(10);
    await turn();
    const lines = sidecar.writes.flatMap((write) => write.trim().split('\n').map(decodeMessage));
    expect(lines.map((message) => message?.type)).toEqual(['watch', 'unwatch', 'watch']);
    await lifeline.release();
    expect(clock.pending).toBe(0);
  });

  it('asks a sidecar that watches trees for a pong, and kills and replaces one that does not answer in time', async () => {
    const sidecar = fakeSidecar();
    const clock = createManualClock();
    const warnings: string[] = [];
    const lifeline = new Lifeline({
      spawn: sidecar.spawn,
      clock,
      logger: { warn: (message) => warnings.push(message) },
      answerTimeoutMs: 1000,
    });
    await lifeline.ready;
    await turn();
    // No tree watched: nothing is asked, no timer runs.
    expect(clock.pending).toBe(0);
    lifeline.watch({ pid: 101, startTime: 5 });
    clock.advance(200);
    await turn();
    const sent = () => sidecar.writes.flatMap((write) => write.trim().split('\n').map(decodeMessage));
    const ping = sent().find((message) => message?.type === 'ping');
    expect(ping).toEqual({ type: 'ping', seq: 1 });
    // Answered each time: nothing happens, the next ping follows.
    for (let seq = 1; seq <= 6; seq += 1) {
      sidecar.answer({ type: 'pong', seq });
      await turn();
      clock.advance(200);
      await turn();
    }
    expect(sent().filter((message) => message?.type === 'ping')).toHaveLength(7);
    expect(sidecar.kills).toEqual([]);
    // Unanswered for the bound (a stopped sidecar): killed, started again and told every tree.
    sidecar.writes.length = 0;
    clock.advance(1200);
    await turn();
    expect(sidecar.kills).toEqual(['SIGKILL']);
    expect(sidecar.spawns).toBe(2);
    expect(sent()).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'watch', pid: 101 })]));
    expect(warnings).toContain('the lifeline sidecar did not answer; killing it and starting another');
    await lifeline.release();
    expect(clock.pending).toBeLessThanOrEqual(1);
  });
});
