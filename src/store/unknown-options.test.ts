import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemorySessionStore } from './memory-session-store.js';
import { openSqliteSessionStore } from './sqlite-session-store.js';

const root = mkdtempSync(join(tmpdir(), 'errand-store-options-'));

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('unknown option keys of the stores', () => {
  it.each([
    [
      'createMemorySessionStore',
      () => createMemorySessionStore({ maxFieldByte: 10 } as never),
      'Unknown option `maxFieldByte` for createMemorySessionStore (did you mean `maxFieldBytes`?)',
    ],
    [
      'the memory store’s prune',
      () => createMemorySessionStore().prune({ keepClosedSession: 1 } as never),
      'Unknown option `keepClosedSession` for SessionStore.prune (did you mean `keepClosedSessions`?)',
    ],
  ])('%s rejects an unknown key', (_name, action, message) => {
    expect(action).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(action).toThrow(message);
  });

  it.each([
    [
      { synchronus: 'normal' },
      'Unknown option `synchronus` for openSqliteSessionStore (did you mean `synchronous`?)',
    ],
    [
      { pruneOnOpen: { keepClosed: 1 } },
      'Unknown option `pruneOnOpen.keepClosed` for openSqliteSessionStore; known options: `pruneOnOpen.keepClosedSessions`,',
    ],
  ])('openSqliteSessionStore rejects %o before creating the file', (options, message) => {
    const file = join(root, 'never', 'errand.sqlite');
    const open = () => openSqliteSessionStore({ file, ...options } as never);
    expect(open).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION' }));
    expect(open).toThrow(message);
    expect(existsSync(join(root, 'never'))).toBe(false);
  });

  it('accepts undefined values of known keys', () => {
    const store = openSqliteSessionStore({
      file: join(root, 'ok', 'errand.sqlite'),
      busyTimeoutMs: undefined,
    });
    expect(() => store.prune({ keepClosedSessions: undefined })).not.toThrow();
    store.close();
  });
});
