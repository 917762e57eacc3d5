/**
 * A result pending on the ledger, over a real runtime on a SQLite store: a background command's result is
 * pending from its end while its notification waits in the session's queue, and completed once a surface
 * delivered it — the same in the runtime's own feed and in the store-backed backend of another handle on
 * the file (`errand serve`). Deliveries made through another handle, with no signal, are seen within a
 * check period; a session that closes leaves nothing pending.
 */
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '../../test/support/registry.js';
import { type BackgroundWorksStore, createBackgroundWorksStore } from '../events/index.js';
import { createStoreDashboardBackend, type StoreDashboardBackend } from '../server/index.js';
import type { Session } from '../session/index.js';
import { openSqliteSessionStore, type SessionStore } from '../store/index.js';
import { scriptedModel } from '../testing/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  readonly home: string;
  readonly store: SessionStore;
  readonly runtime: ErrandRuntime;
  readonly session: Session;
  /** The runtime's own feed, projected. */
  readonly own: BackgroundWorksStore;
  /** The store-backed backend of another handle on the same file, as `errand serve` has it. */
  readonly served: StoreDashboardBackend;
  readonly servedWorks: BackgroundWorksStore;
  /** The states of the session's works in both backends (the store one read now). */
  states(): { own: string[]; served: string[] };
  /** Starts a background command that ends when `gate` appears; resolves with its task id. */
  startGated(gate: string): Promise<string>;
}

async function setUp(): Promise<Setup> {
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'errand-ledger-view-')));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  const store = openSqliteSessionStore({ home });
  cleanups.push(() => store.close());
  const model = scriptedModel();
  const runtime = await createErrandRuntime({
    model,
    store,
    cwd: home,
    pty: false,
    commandPollMs: false,
    // As under `errand mcp`: notifications never wake a turn, they wait for a surface to take them.
    notifications: { wakeBudget: 0 },
    events: { ledgerCheckMs: 50 },
    logger: capturingLogger(),
  });
  cleanups.push(() => runtime.dispose());
  const session = runtime.createSession({ id: 'main' });
  const own = createBackgroundWorksStore(runtime.events);
  cleanups.push(() => own.dispose());
  const other = openSqliteSessionStore({ home });
  cleanups.push(() => other.close());
  const served = createStoreDashboardBackend({ store: other, pollMs: 3_600_000 });
  cleanups.push(() => served.dispose());
  const servedWorks = createBackgroundWorksStore(served.events);
  cleanups.push(() => servedWorks.dispose());
  return {
    home,
    store,
    runtime,
    session,
    own,
    served,
    servedWorks,
    states() {
      served.refresh();
      return {
        own: own.sessionWorks('main').map((work) => work.state),
        served: servedWorks.sessionWorks('main').map((work) => work.state),
      };
    },
    async startGated(gate) {
      model.push(
        {
          toolCalls: [
            {
              name: 'bash',
              input: {
                command: `while [ ! -e ${gate} ]; do sleep 0.02; done; echo built`,
                run_in_background: true,
              },
            },
          ],
        },
        { text: 'Started.' },
      );
      await session.send('build it');
      return runtime.tasks.list(session.owner).at(-1)!.id;
    },
  };
}

describe('a result pending on the ledger, in both dashboard backends', () => {
  it('is pending while its notification waits in the queue, and completed once a surface delivered it', async () => {
    const setup = await setUp();
    const gate = join(setup.home, 'gate');
    const id = await setup.startGated(gate);
    expect(setup.states()).toEqual({ own: ['running'], served: ['running'] });

    writeFileSync(gate, '');
    await vi.waitFor(() => expect(setup.store.listQueued('main')).toHaveLength(1), { timeout: 10_000 });
    expect(setup.states()).toEqual({ own: ['resultPending'], served: ['resultPending'] });
    expect(setup.own.work(id)).toMatchObject({ status: 'completed', exitCode: 0 });

    const delivered = setup.session.inbox.take({ source: 'mcp_tool_result' });
    expect(delivered.map((notification) => notification.taskId)).toEqual([id]);
    expect(setup.states()).toEqual({ own: ['completed'], served: ['completed'] });
    expect(existsSync(gate)).toBe(true);
  });

  it('sees a delivery made through another handle on the store within a check period', async () => {
    const setup = await setUp();
    const gate = join(setup.home, 'gate');
    await setup.startGated(gate);
    writeFileSync(gate, '');
    await vi.waitFor(() => expect(setup.store.listQueued('main')).toHaveLength(1), { timeout: 10_000 });
    const [entry] = setup.store.listQueued('main');
    // Another process commits it as a delivery does (the message, the entry delivered, the ending told,
    // in one transaction): this runtime is told nothing.
    const hook = openSqliteSessionStore({ home: setup.home });
    try {
      const delivered = hook.transaction(() => {
        const result = hook.commitDelivery('main', [entry!.id], {
          role: 'user',
          content: { text: entry!.text },
          visibility: 'model-only',
          source: 'hook',
        });
        hook.markTold('main', [entry!.taskId!]);
        return result;
      });
      expect(delivered.ok).toBe(true);
    } finally {
      hook.close();
    }
    await vi.waitFor(
      () => expect(setup.own.sessionWorks('main').map((work) => work.state)).toEqual(['completed']),
      {
        timeout: 5_000,
      },
    );
    expect(setup.states()).toEqual({ own: ['completed'], served: ['completed'] });
  });

  it('leaves nothing pending once the session closed', async () => {
    const setup = await setUp();
    const gate = join(setup.home, 'gate');
    await setup.startGated(gate);
    writeFileSync(gate, '');
    await vi.waitFor(() => expect(setup.store.listQueued('main')).toHaveLength(1), { timeout: 10_000 });
    expect(setup.states()).toEqual({ own: ['resultPending'], served: ['resultPending'] });
    await setup.session.close();
    // The runtime forgets a closed session's tasks; the store keeps their records, none pending.
    expect(setup.states()).toEqual({ own: [], served: ['completed'] });
    expect(setup.store.listQueued('main')).toEqual([]);
  });
});
