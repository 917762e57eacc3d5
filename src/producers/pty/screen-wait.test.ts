import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../tasks/clock.js';
import type { PtyExit, PtyProcess } from './pty-process.js';
import { waitForQuiet, waitForScreen } from './screen-wait.js';
import type { ScreenView } from './terminal-screen.js';

/** A stand-in for a running pty: the test sets the screen text and announces changes. */
function fakePty() {
  const listeners = new Set<() => void>();
  let text = '';
  let exit: PtyExit | undefined;
  const pty = {
    screen: (): ScreenView => ({
      text,
      cols: 80,
      rows: 24,
      cursorRow: 0,
      cursorColumn: 0,
      alternateScreen: false,
      truncated: false,
    }),
    get exit() {
      return exit;
    },
    onChange(listener: () => void) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  } as unknown as PtyProcess;
  return {
    pty,
    listeners,
    show(next: string) {
      text = next;
      for (const listener of [...listeners]) listener();
    },
    stop() {
      exit = { reason: 'completed' } as PtyExit;
      for (const listener of [...listeners]) listener();
    },
  };
}

describe('waitForScreen', () => {
  it('resolves true once the predicate holds, and unsubscribes', async () => {
    const clock = createManualClock();
    const fake = fakePty();
    const waiting = waitForScreen(fake.pty, (screen) => screen.text.includes('$'), {
      timeoutMs: 1000,
      clock,
    });
    fake.show('loading');
    fake.show('ready $');
    expect(await waiting).toBe(true);
    expect(fake.listeners.size).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('resolves false on timeout, on abort and when the program stops', async () => {
    const clock = createManualClock();
    const fake = fakePty();
    const timedOut = waitForScreen(fake.pty, () => false, { timeoutMs: 1000, clock });
    clock.advance(1000);
    expect(await timedOut).toBe(false);

    const controller = new AbortController();
    const aborted = waitForScreen(fake.pty, () => false, {
      timeoutMs: 1000,
      clock,
      signal: controller.signal,
    });
    controller.abort();
    expect(await aborted).toBe(false);

    const stopped = waitForScreen(fake.pty, () => false, { timeoutMs: 1000, clock });
    fake.stop();
    expect(await stopped).toBe(false);
    expect(fake.listeners.size).toBe(0);
  });
  it('rejects with the error of a predicate that throws on a change, without throwing into the notifier', async () => {
    const clock = createManualClock();
    const fake = fakePty();
    const broken = new Error('predicate failed');
    const waiting = waitForScreen(
      fake.pty,
      (screen) => {
        if (screen.text === 'boom') throw broken;
        return false;
      },
      { timeoutMs: 1000, clock },
    );
    expect(() => fake.show('boom')).not.toThrow();
    await expect(waiting).rejects.toBe(broken);
    expect(fake.listeners.size).toBe(0);
    expect(clock.pending).toBe(0);
    // Later changes reach nothing of the finished wait.
    expect(() => fake.show('boom')).not.toThrow();
  });

  it('rejects with the error of a predicate that throws on its first look, cleaning up', async () => {
    const clock = createManualClock();
    const fake = fakePty();
    const controller = new AbortController();
    const waiting = waitForScreen(
      fake.pty,
      () => {
        throw new TypeError('bad predicate');
      },
      { timeoutMs: 1000, clock, signal: controller.signal },
    );
    await expect(waiting).rejects.toThrow('bad predicate');
    expect(fake.listeners.size).toBe(0);
    expect(clock.pending).toBe(0);
  });
});

describe('waitForQuiet', () => {
  it('resolves once nothing changed for the quiet period, restarting it on every change', async () => {
    const clock = createManualClock();
    const fake = fakePty();
    let done = false;
    const waiting = waitForQuiet(fake.pty, { quietMs: 100, timeoutMs: 10_000, clock }).then(() => {
      done = true;
    });
    clock.advance(90);
    fake.show('a');
    clock.advance(90);
    await Promise.resolve();
    expect(done).toBe(false);
    clock.advance(10);
    await waiting;
    expect(done).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('is bounded by its timeout even while output keeps coming', async () => {
    const clock = createManualClock();
    const fake = fakePty();
    const waiting = waitForQuiet(fake.pty, { quietMs: 100, timeoutMs: 250, clock });
    for (let step = 0; step < 5; step += 1) {
      clock.advance(60);
      fake.show(`tick ${step}`);
    }
    await waiting;
    expect(clock.pending).toBe(0);
  });
});
