/**
 * Commits and checkpoints on the SQLite store: a deferred write commits without syncing the log, an
 * immediate one syncs it once after its commit, a nested call joins the outer write's durability, and a
 * process killed with SIGKILL right after a deferred write loses nothing. Checkpoints run on their thread
 * while the event loop turns, inline when the thread falls behind or may not run.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, fdatasync, fdatasyncSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { composeSessionStore } from './compose-session-store.js';
import { expectErrandError, START_TIME } from './conformance/index.js';
import { migrate } from './migrations.js';
import { sessionStoreOptions } from './options.js';
import { CHECKPOINT_LAG_FACTOR } from './sqlite-checkpointer.js';
import { openSqliteSessionStore } from './sqlite-session-store.js';
import { createSqliteBackend } from './sqlite-tables.js';
import type { StoreBackend } from './store-tables.js';

const writer = new URL('../../test/fixtures/store/deferred-writer.mjs', import.meta.url).pathname;
let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'errand-deferred-'));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

interface Opened {
  readonly database: Database.Database;
  readonly backend: StoreBackend;
  /** Log syncs so far, on the loop and in the thread pool. */
  syncs(): number;
  poolSyncs(): number;
  /** Pool syncs that have ended. */
  poolSyncsDone(): number;
  /** Checkpoints finished so far, by the thread and inline. */
  readonly checkpoints: { thread: number; inline: number };
}

const checkpointsOf = (opened: Opened) => ({ ...opened.checkpoints });

function openBackend(
  file: string,
  options: {
    synchronous?: 'full' | 'normal';
    checkpointEveryCommits?: number;
    checkpointThread?: boolean;
    checkpointFinishFrames?: number;
    syncDeferredEveryCommits?: number;
    syncDeferredWithinMs?: number;
    /** Fails the pool's syncs while it returns an error. */
    poolSyncFailure?: () => Error | null;
    /** Holds each pool sync until the promise it returns settles. */
    holdPoolSync?: () => Promise<void>;
  } = {},
): Opened {
  const database = new Database(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  migrate(database, file, START_TIME);
  let syncs = 0;
  let poolSyncs = 0;
  let poolSyncsDone = 0;
  const checkpoints = { thread: 0, inline: 0 };
  const backend = createSqliteBackend(database, {
    busyTimeoutMs: 10,
    capabilities: { sharedAcrossProcesses: false, persistent: true },
    file,
    synchronous: options.synchronous ?? 'full',
    checkpointEveryCommits: options.checkpointEveryCommits ?? 0,
    ...(options.checkpointThread === undefined ? {} : { checkpointThread: options.checkpointThread }),
    ...(options.checkpointFinishFrames === undefined
      ? {}
      : { checkpointFinishFrames: options.checkpointFinishFrames }),
    ...(options.syncDeferredEveryCommits === undefined
      ? {}
      : { syncDeferredEveryCommits: options.syncDeferredEveryCommits }),
    ...(options.syncDeferredWithinMs === undefined
      ? {}
      : { syncDeferredWithinMs: options.syncDeferredWithinMs }),
    syncLog: (fd) => {
      syncs += 1;
      fdatasyncSync(fd);
    },
    onCheckpoint: (where) => {
      checkpoints[where] += 1;
    },
    syncLogAsync: (fd, done) => {
      poolSyncs += 1;
      const failure = options.poolSyncFailure?.() ?? null;
      const ended = (error: Error | null) => {
        poolSyncsDone += 1;
        done(error);
      };
      if (failure !== null) setImmediate(() => ended(failure));
      else if (options.holdPoolSync === undefined) fdatasync(fd, ended);
      else void options.holdPoolSync().then(() => fdatasync(fd, ended));
    },
  });
  return {
    database,
    backend,
    syncs: () => syncs,
    poolSyncs: () => poolSyncs,
    poolSyncsDone: () => poolSyncsDone,
    checkpoints,
  };
}

const synchronous = (database: Database.Database) => database.pragma('synchronous', { simple: true });
const insertSequence = (database: Database.Database, kind: string, last: number) =>
  database.prepare('INSERT INTO task_sequences (kind, last) VALUES (?, ?)').run(kind, last);
const sequences = (database: Database.Database) =>
  (database.prepare('SELECT count(*) AS n FROM task_sequences').get() as { n: number }).n;

describe('deferred durability', () => {
  it('syncs the log after an immediate commit only, and never switches the connection out of NORMAL', () => {
    const { database, backend, syncs } = openBackend(join(root, 'modes.sqlite'));
    try {
      expect(backend.transaction(() => synchronous(database), 'deferred')).toBe(1);
      expect(syncs()).toBe(0);
      expect(backend.transaction(() => synchronous(database))).toBe(1);
      expect(syncs()).toBe(1);
      backend.transaction(() => synchronous(database), 'immediate');
      expect(syncs()).toBe(2);
      // A nested call that names no durability joins the outer deferred write.
      backend.transaction(() => backend.transaction(() => insertSequence(database, 'a', 1)), 'deferred');
      expect(syncs()).toBe(2);
      // A body that throws commits nothing, so nothing is synced.
      expect(() =>
        backend.transaction(() => {
          insertSequence(database, 'b', 7);
          throw new Error('body failed');
        }),
      ).toThrow('body failed');
      expect(syncs()).toBe(2);
      expect(sequences(database)).toBe(1);
      // An immediate call nested in a deferred one makes the outer commit sync, once, after it.
      backend.transaction(
        () => backend.transaction(() => insertSequence(database, 'c', 8), 'immediate'),
        'deferred',
      );
      expect(syncs()).toBe(3);
      expect(sequences(database)).toBe(2);
      expect(synchronous(database)).toBe(1);
    } finally {
      backend.close();
    }
  });

  it("takes a task record's durability from its call: deferred syncs nothing, and a bad one writes nothing", () => {
    const opened = openBackend(join(root, 'task-writes.sqlite'));
    const store = composeSessionStore(opened.backend, sessionStoreOptions.resolve({ now: () => START_TIME }));
    try {
      store.createSession({ id: 's', cwd: '/' });
      const before = opened.syncs();
      const record = {
        id: 'bash-1',
        sessionId: 's',
        kind: 'bash',
        label: 'true',
        status: 'running' as const,
        isBackgrounded: true,
        branchGeneration: 0,
        startedAt: START_TIME,
        reported: false,
      };
      store.upsertTask(record, { durability: 'deferred' });
      expect(opened.syncs()).toBe(before);
      store.upsertTask({ ...record, detail: { pid: 42 } });
      expect(opened.syncs()).toBe(before + 1);
      // Inside a transaction the outer call's durability is the write's: a deferred one stays deferred.
      store.transaction(() => store.upsertTask({ ...record, detail: { pid: 43 } }), {
        durability: 'deferred',
      });
      expect(opened.syncs()).toBe(before + 1);
      const refused = expectErrandError(
        () => store.upsertTask({ ...record, label: 'other' }, { durability: 'later' as never }),
        'INVALID_ARGUMENT',
      );
      expect(refused.message).toContain('options.durability');
      expect(store.getTask('bash-1', 's')).toMatchObject({ label: 'true', detail: { pid: 43 } });
    } finally {
      store.close();
    }
  });

  it('waits for the disk in the thread pool with whenDurable: one sync for every caller waiting then', async () => {
    const opened = openBackend(join(root, 'when-durable.sqlite'));
    const { backend, database } = opened;
    try {
      // Nothing waits for the disk yet: no sync at all.
      await backend.whenDurable();
      expect(opened.poolSyncs()).toBe(0);
      backend.transaction(() => insertSequence(database, 'a', 1), 'deferred');
      backend.transaction(() => insertSequence(database, 'b', 1), 'deferred');
      await Promise.all([backend.whenDurable(), backend.whenDurable(), backend.whenDurable()]);
      expect(opened.poolSyncs()).toBe(1);
      // Synced: a later call waits for nothing.
      await backend.whenDurable();
      expect(opened.poolSyncs()).toBe(1);
      // Commits made before a sync starts share it.
      backend.transaction(() => insertSequence(database, 'c', 1), 'deferred');
      const first = backend.whenDurable();
      backend.transaction(() => insertSequence(database, 'd', 1), 'deferred');
      await Promise.all([first, backend.whenDurable()]);
      expect(opened.poolSyncs()).toBe(2);
      // A commit made while a sync runs is covered by the next one, not by the running one.
      backend.transaction(() => insertSequence(database, 'f', 1), 'deferred');
      const running = backend.whenDurable();
      await vi.waitFor(() => expect(opened.poolSyncs()).toBe(3), { interval: 1 });
      backend.transaction(() => insertSequence(database, 'g', 1), 'deferred');
      let secondDone = false;
      const second = backend.whenDurable().then(() => {
        secondDone = true;
      });
      await running;
      await second;
      expect(secondDone).toBe(true);
      expect(opened.poolSyncs()).toBe(4);
      // An immediate commit synced on the loop leaves nothing to wait for.
      backend.transaction(() => insertSequence(database, 'e', 1));
      await backend.whenDurable();
      expect(opened.poolSyncs()).toBe(4);
      expect(opened.syncs()).toBe(1);
    } finally {
      backend.close();
    }
  });

  it('syncs deferred commits in the background once so many wait; a waiter never queues behind it', async () => {
    const opened = openBackend(join(root, 'background-count.sqlite'), { syncDeferredEveryCommits: 4 });
    const { backend, database } = opened;
    const commit = (name: string) => backend.transaction(() => insertSequence(database, name, 1), 'deferred');
    try {
      for (const name of ['a0', 'a1', 'a2']) commit(name);
      await new Promise((resolve) => setImmediate(resolve));
      expect(opened.poolSyncs()).toBe(0);
      // The fourth starts one at once; more commits while it runs start no second one.
      commit('a3');
      expect(opened.poolSyncs()).toBe(1);
      for (const name of ['b0', 'b1', 'b2', 'b3']) commit(name);
      expect(opened.poolSyncs()).toBe(1);
      // A caller waiting for those starts its own beside it, not after it.
      const waited = backend.whenDurable();
      await new Promise((resolve) => setImmediate(resolve));
      expect(opened.poolSyncs()).toBe(2);
      await waited;
      await vi.waitFor(() => expect(opened.poolSyncsDone()).toBe(2), { interval: 1 });
      // With nothing committed since a background sync started, a caller waits for that one.
      for (const name of ['c0', 'c1', 'c2', 'c3']) commit(name);
      expect(opened.poolSyncs()).toBe(3);
      await backend.whenDurable();
      expect(opened.poolSyncs()).toBe(3);
      expect(opened.syncs()).toBe(0);
    } finally {
      backend.close();
    }
  });

  it('syncs a lone deferred commit in the background after syncDeferredWithinMs', async () => {
    const opened = openBackend(join(root, 'background-time.sqlite'), { syncDeferredWithinMs: 20 });
    const { backend, database } = opened;
    try {
      backend.transaction(() => insertSequence(database, 'a', 1), 'deferred');
      expect(opened.poolSyncs()).toBe(0);
      await vi.waitFor(() => expect(opened.poolSyncs()).toBe(1), { interval: 5, timeout: 5000 });
      // It covers the commit: a caller waiting for the disk waits for it, not for another.
      await backend.whenDurable();
      expect(opened.poolSyncs()).toBe(1);
      // An immediate commit syncs everything first: the timer it finds finds nothing left.
      backend.transaction(() => insertSequence(database, 'b', 1), 'deferred');
      backend.transaction(() => insertSequence(database, 'c', 1));
      expect(opened.syncs()).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(opened.poolSyncs()).toBe(1);
    } finally {
      backend.close();
    }
    // A store closed with a commit unsynced starts nothing later.
    const closed = openBackend(join(root, 'background-closed.sqlite'), { syncDeferredWithinMs: 10 });
    closed.backend.transaction(() => insertSequence(closed.database, 'a', 1), 'deferred');
    closed.backend.close();
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(closed.poolSyncs()).toBe(0);
  });

  it('keeps the time bound when a sync already running when it comes does not cover the last commit', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let first = true;
    const opened = openBackend(join(root, 'background-behind.sqlite'), {
      syncDeferredWithinMs: 20,
      holdPoolSync: () => {
        if (!first) return Promise.resolve();
        first = false;
        return held;
      },
    });
    const { backend, database } = opened;
    try {
      backend.transaction(() => insertSequence(database, 'a', 1), 'deferred');
      // A caller's sync covers the first commit only, and is held past the timer.
      const waited = backend.whenDurable();
      await new Promise((resolve) => setImmediate(resolve));
      backend.transaction(() => insertSequence(database, 'b', 1), 'deferred');
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(opened.poolSyncs()).toBe(1);
      release();
      await waited;
      // The timer that found it running looks again: the second commit gets its sync.
      await vi.waitFor(() => expect(opened.poolSyncsDone()).toBe(2), { interval: 5, timeout: 5000 });
      await backend.whenDurable();
      expect(opened.poolSyncs()).toBe(2);
    } finally {
      backend.close();
    }
  });

  it('reports a failed background sync to the next caller that waits for the disk, once', async () => {
    let failing = true;
    const eio = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
    const opened = openBackend(join(root, 'background-failure.sqlite'), {
      syncDeferredEveryCommits: 2,
      poolSyncFailure: () => (failing ? eio : null),
    });
    const { backend, database } = opened;
    try {
      backend.transaction(() => insertSequence(database, 'a', 1), 'deferred');
      backend.transaction(() => insertSequence(database, 'b', 1), 'deferred');
      // Its failure lands before the next caller asks.
      await vi.waitFor(() => expect(opened.poolSyncsDone()).toBe(1), { interval: 1 });
      await new Promise((resolve) => setImmediate(resolve));
      failing = false;
      // The disk may have dropped what the failed sync could not write: the next wait hears of it.
      await expect(backend.whenDurable()).rejects.toBe(eio);
      await backend.whenDurable();
      // An immediate commit's own sync is the next caller after another failure: it throws, committed.
      failing = true;
      backend.transaction(() => insertSequence(database, 'c', 1), 'deferred');
      backend.transaction(() => insertSequence(database, 'd', 1), 'deferred');
      await vi.waitFor(() => expect(opened.poolSyncsDone()).toBe(3), { interval: 1 });
      await new Promise((resolve) => setImmediate(resolve));
      failing = false;
      expect(() => backend.transaction(() => insertSequence(database, 'e', 1))).toThrow(eio);
      expect(sequences(database)).toBe(5);
      backend.transaction(() => insertSequence(database, 'f', 1));
      await backend.whenDurable();
    } finally {
      backend.close();
    }
  });

  it('syncs nothing on a store opened with synchronous normal', async () => {
    const opened = openBackend(join(root, 'normal.sqlite'), {
      synchronous: 'normal',
      syncDeferredEveryCommits: 1,
      syncDeferredWithinMs: 1,
    });
    const { backend, syncs, database } = opened;
    try {
      backend.transaction(() => insertSequence(database, 'a', 1));
      backend.transaction(() => insertSequence(database, 'b', 1), 'immediate');
      backend.transaction(() => insertSequence(database, 'c', 1), 'deferred');
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(syncs()).toBe(0);
      expect(opened.poolSyncs()).toBe(0);
    } finally {
      backend.close();
    }
  });
});

describe('checkpoints', () => {
  const commit = (opened: Opened, index: number) =>
    opened.backend.transaction(() => insertSequence(opened.database, `k${index}`, index), 'deferred');

  it('runs them on the checkpointer thread, never inside a commit, while the event loop turns', async () => {
    const opened = openBackend(join(root, 'thread.sqlite'), { checkpointEveryCommits: 8 });
    try {
      for (let round = 0; round < 6; round += 1) {
        for (let index = 0; index < 8; index += 1) commit(opened, round * 8 + index);
        // Let the thread's answer in before the next round.
        await vi.waitFor(() => expect(checkpointsOf(opened).thread).toBeGreaterThan(round), {
          timeout: 10_000,
          interval: 5,
        });
      }
      expect(checkpointsOf(opened)).toEqual({ thread: 6, inline: 0 });
      // What was checkpointed is in the database file itself: a copy of it without its log holds every row.
      const copy = join(root, 'thread-copy.sqlite');
      copyFileSync(join(root, 'thread.sqlite'), copy);
      const alone = new Database(copy, { readonly: true });
      try {
        expect(sequences(alone)).toBe(48);
      } finally {
        alone.close();
      }
    } finally {
      opened.backend.close();
    }
  });

  it('keeps the log bounded when commits never pause, though the thread never sees the log finished', async () => {
    const file = join(root, 'busy.sqlite');
    const opened = openBackend(file, { checkpointEveryCommits: 16, checkpointFinishFrames: 64 });
    try {
      // A commit on every turn of the loop: each thread checkpoint leaves what came in while it ran.
      for (let index = 0; index < 6000; index += 1) {
        commit(opened, index);
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(checkpointsOf(opened).thread).toBeGreaterThan(0);
      // Unbounded, these commits leave about 28 MiB of log. Bounded, the log grows at most by what comes in
      // while one checkpoint runs before it is reused: a few MiB, 13 MiB once on a machine busy with a
      // whole test run.
      expect(statSync(`${file}-wal`).size).toBeLessThan(20 * 1024 * 1024);
    } finally {
      opened.backend.close();
    }
  });

  it('checkpoints inline when the thread falls behind, so the log stays bounded', () => {
    const opened = openBackend(join(root, 'lagging.sqlite'), { checkpointEveryCommits: 8 });
    try {
      // The loop never yields: the thread's answers cannot arrive, so it looks stuck.
      for (let index = 0; index < 8 * CHECKPOINT_LAG_FACTOR * 3; index += 1) commit(opened, index);
      expect(checkpointsOf(opened).inline).toBeGreaterThanOrEqual(2);
    } finally {
      opened.backend.close();
    }
  });

  it('checkpoints inline every so many commits when no thread may run', () => {
    const opened = openBackend(join(root, 'inline.sqlite'), {
      checkpointEveryCommits: 8,
      checkpointThread: false,
    });
    try {
      for (let index = 0; index < 80; index += 1) commit(opened, index);
      expect(checkpointsOf(opened)).toEqual({ thread: 0, inline: 10 });
    } finally {
      opened.backend.close();
    }
  });
});

describe('a killed writer', () => {
  it('loses no deferred write when the process is killed with SIGKILL right after it', async () => {
    const file = join(root, 'killed', 'errand.sqlite');
    const child = spawn(process.execPath, [writer, file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    await new Promise<void>((resolve, reject) => {
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('WRITTEN')) resolve();
      });
      void exited.then(() => reject(new Error(`the writer exited first: ${stderr}`)));
    });
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const store = openSqliteSessionStore({ file });
    try {
      expect(
        store
          .listSessions()
          .map((session) => session.id)
          .sort(),
      ).toEqual(Array.from({ length: 50 }, (_, index) => `s${index}`).sort());
    } finally {
      store.close();
    }
  });
});
