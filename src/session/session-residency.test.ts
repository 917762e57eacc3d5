import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock, createOwner, type Logger } from '../tasks/index.js';
import { type ResidentView, SessionResidency } from './session-residency.js';

const warnings: string[] = [];
const silent: Logger = { warn: (message) => warnings.push(message) };

function resident(id: string, state: { idle: boolean }): ResidentView & { unloads: number } {
  const view = {
    id: id as ResidentView['id'],
    owner: createOwner(id),
    unloads: 0,
    unloading: false,
    get idle() {
      return state.idle;
    },
    unload() {
      view.unloads += 1;
      view.unloading = true;
      return Promise.resolve();
    },
  };
  return view;
}

describe('SessionResidency', () => {
  afterEach(() => {
    expect(warnings.splice(0)).toEqual([]);
  });

  it('unloads a session once it was idle for the bound, and not one whose work still runs', () => {
    const clock = createManualClock();
    const quiet = resident('quiet', { idle: true });
    const busy = resident('busy', { idle: true });
    const residency = new SessionResidency({
      clock,
      idleAfterMs: 1000,
      residents: () => [quiet, busy],
      isWorking: (session) => session.id === 'busy',
      logger: silent,
    });
    residency.touch('quiet');
    residency.touch('busy');
    residency.arm();
    clock.advance(999);
    expect(quiet.unloads).toBe(0);
    clock.advance(1);
    expect(quiet.unloads).toBe(1);
    expect(busy.unloads).toBe(0);
    // Still working: it counts as active now and is looked at again one bound later.
    clock.advance(1000);
    expect(busy.unloads).toBe(0);
  });

  it('starts the idle time over on activity, and unloads nothing once stopped', () => {
    const clock = createManualClock();
    const state = { idle: true };
    const session = resident('s', state);
    const residency = new SessionResidency({
      clock,
      idleAfterMs: 100,
      residents: () => [session],
      isWorking: () => false,
      logger: silent,
    });
    residency.touch('s');
    residency.arm();
    clock.advance(60);
    residency.touch('s');
    residency.arm();
    clock.advance(60);
    expect(session.unloads).toBe(0);
    residency.stop();
    clock.advance(1000);
    expect(session.unloads).toBe(0);
  });

  it('never unloads without a bound', () => {
    const clock = createManualClock();
    const session = resident('s', { idle: true });
    const residency = new SessionResidency({
      clock,
      idleAfterMs: false,
      residents: () => [session],
      isWorking: () => false,
      logger: silent,
    });
    residency.arm();
    clock.advance(10_000_000);
    expect(session.unloads).toBe(0);
  });
});
