/**
 * Shared plumbing of the session store conformance suite: a fresh store per test on a fake clock, and
 * assertions on Errand error codes.
 */
import { afterEach, beforeEach, expect } from 'vitest';
import { ErrandError } from '../../tasks/index.js';
import type { SessionStoreOptions } from '../options.js';
import type { SessionStore } from '../session-store.js';

/** Opens a fresh, empty store with these options. The suite closes every store it opened. */
export type OpenSessionStore = (options: SessionStoreOptions) => SessionStore;

export const START_TIME = 1_700_000_000_000;

export interface Harness {
  /** The store of the current test. */
  readonly store: SessionStore;
  /** The fake clock every store of the current test reads. */
  now(): number;
  advance(milliseconds: number): void;
  /** Opens another fresh store on the same clock (closed after the test). */
  open(options?: SessionStoreOptions): SessionStore;
}

/** Registers hooks that give every test a fresh store and close it afterwards. */
export function useHarness(openStore: OpenSessionStore): Harness {
  let time = START_TIME;
  let current: SessionStore | undefined;
  const opened: SessionStore[] = [];
  const harness: Harness = {
    get store() {
      if (!current) throw new Error('The harness store is only available inside a test');
      return current;
    },
    now: () => time,
    advance(milliseconds) {
      time += milliseconds;
    },
    open(options = {}) {
      const store = openStore({ now: () => time, ...options });
      opened.push(store);
      return store;
    },
  };
  beforeEach(() => {
    time = START_TIME;
    current = harness.open();
  });
  afterEach(() => {
    for (const store of opened.splice(0)) store.close();
    current = undefined;
  });
  return harness;
}

/** Runs `action`, expects an ErrandError with `code`, and returns it for further checks. */
export function expectErrandError(action: () => unknown, code: string): ErrandError {
  let thrown: unknown;
  try {
    action();
  } catch (error) {
    thrown = error;
  }
  expect(ErrandError.isInstance(thrown), `expected an ErrandError ${code}, got ${String(thrown)}`).toBe(true);
  const error = thrown as ErrandError;
  expect(error.code).toBe(code);
  return error;
}
