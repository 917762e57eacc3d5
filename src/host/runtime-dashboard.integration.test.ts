/**
 * The dashboard over real runtimes on one SQLite store, through HTTP: the session list with history
 * present (order, titles, the server's own session, other runtimes' running work), Stop all, moving a
 * running foreground command to the background, and the conversation's pages with tool calls and the
 * notifications that reached the model — in-process (`runtime.dashboard`) and through the store
 * (`createStoreDashboardBackend`, whose commands the holding runtime answers).
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isAlive } from '../../test/fixtures/bash/index.js';
import { capturingLogger } from '../../test/support/registry.js';
import {
  createDashboardServer,
  createStoreDashboardBackend,
  type DashboardBackend,
  type DashboardServer,
} from '../server/index.js';
import { openSqliteSessionStore, type SessionStore } from '../store/index.js';
import { type ScriptedModel, scriptedModel } from '../testing/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function temporaryHome(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), 'errand-runtime-dash-')));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/** A store whose clock moves on with every read, so sessions created one after another are ordered. */
function openStore(home: string): SessionStore {
  let bump = 0;
  const store = openSqliteSessionStore({ home, now: () => Date.now() + bump++ });
  cleanups.push(() => store.close());
  return store;
}

async function startRuntime(store: SessionStore, cwd: string, model: ScriptedModel): Promise<ErrandRuntime> {
  const runtime = await createErrandRuntime({
    model,
    store,
    cwd,
    pty: false,
    commandPollMs: 20,
    bash: { tool: { autoBackgroundAfterMs: false } },
    logger: capturingLogger(),
  });
  cleanups.push(() => runtime.dispose());
  return runtime;
}

async function serve(backend: DashboardBackend): Promise<{ server: DashboardServer; call: Call }> {
  const server = createDashboardServer({ backend, logger: { warn: vi.fn() } });
  const address = await server.listen();
  cleanups.push(() => server.close());
  const call: Call = async (path, body) => {
    const response = await fetch(`${address.origin}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        Authorization: `Bearer ${server.token}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: await response.json() };
  };
  return { server, call };
}

// biome-ignore lint/suspicious/noExplicitAny: answers are inspected structurally by the assertions
type Call = (path: string, body?: unknown) => Promise<{ status: number; body: any }>;

let sleeps = 0;

/**
 * Starts `sleep` in the background in `sessionId` through the model's bash call; resolves with the task id.
 * Each one sleeps a different time, so the bash tool's duplicate guard starts every one.
 */
async function startBackgroundSleep(runtime: ErrandRuntime, model: ScriptedModel, sessionId: string) {
  sleeps += 1;
  model.push(
    { toolCalls: [{ name: 'bash', input: { command: `sleep ${30 + sleeps}`, run_in_background: true } }] },
    { text: 'started' },
  );
  const session = runtime.sessions.getSession(sessionId)!;
  await session.send('run a long sleep in the background');
  const task = runtime.tasks
    .list(session.owner)
    .filter((candidate) => candidate.isBackgrounded && candidate.status === 'running')
    .at(-1)!;
  return { id: task.id, pid: task.detail.pid as number };
}

describe('the session list with history present', () => {
  it("lists running sessions first, newest first, names them, and marks the server's own and other runtimes' work", async () => {
    const home = temporaryHome();
    const store = openStore(home);
    // History: an ended chat session, then an ended MCP session (a client's name, no user message).
    const earlierModel = scriptedModel([{ text: 'Looking at it.' }]);
    const earlier = await startRuntime(store, home, earlierModel);
    await earlier
      .createSession({ id: 'old-chat', cwd: '/work/parser' })
      .send('Fix the flaky test in\nparser.test.ts');
    earlier.createSession({ id: 'old-mcp', cwd: '/work/api', title: 'MCP: claude-code 2.1.0' });
    await earlier.dispose();

    const theirsModel = scriptedModel();
    const theirs = await startRuntime(store, home, theirsModel);
    theirs.createSession({ id: 'theirs', title: 'MCP: codex 0.17.0' });
    const ownModel = scriptedModel();
    const own = await startRuntime(store, home, ownModel);
    own.createSession({ id: 'idle-own' });
    own.createSession({ id: 'mine' });
    await startBackgroundSleep(theirs, theirsModel, 'theirs');
    await startBackgroundSleep(own, ownModel, 'mine');

    const { call } = await serve(own.dashboard);
    const { body } = await call('/api/sessions');
    expect(
      body.sessions.map((session: Record<string, unknown>) => [
        session.id,
        session.group,
        session.own,
        session.live,
        session.badgeCount,
        session.runningElsewhere,
      ]),
    ).toEqual([
      ['mine', 'running', true, true, 1, 0],
      ['theirs', 'running', false, true, 0, 1],
      ['idle-own', 'live', true, true, 0, 0],
      ['old-mcp', 'ended', false, false, 0, 0],
      ['old-chat', 'ended', false, false, 0, 0],
    ]);
    const byId = new Map(body.sessions.map((session: { id: string }) => [session.id, session]));
    expect(byId.get('old-chat')).toMatchObject({
      firstUserMessage: 'Fix the flaky test in parser.test.ts',
      cwd: '/work/parser',
      pid: null,
    });
    expect(byId.get('old-mcp')).toMatchObject({ firstUserMessage: null, title: 'MCP: claude-code 2.1.0' });
    expect(byId.get('mine')).toMatchObject({
      firstUserMessage: 'run a long sleep in the background',
      pid: process.pid,
    });
    expect(body.sessions[0].createdAt).toBeGreaterThan(body.sessions[1].createdAt);
  });
});

describe('control by hand, in-process', () => {
  it('stops all the running background work of one session, and only that session', async () => {
    const home = temporaryHome();
    const store = openStore(home);
    const model = scriptedModel();
    const runtime = await startRuntime(store, home, model);
    runtime.createSession({ id: 'busy' });
    runtime.createSession({ id: 'other' });
    const first = await startBackgroundSleep(runtime, model, 'busy');
    const second = await startBackgroundSleep(runtime, model, 'busy');
    const elsewhere = await startBackgroundSleep(runtime, model, 'other');
    const { call } = await serve(runtime.dashboard);

    const reply = await call('/api/commands', { type: 'stopAllBackgroundWork', sessionId: 'busy' });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      type: 'ack',
      command: 'stopAllBackgroundWork',
      sessionId: 'busy',
      ok: true,
    });
    expect([...reply.body.stopped].sort()).toEqual([first.id, second.id].sort());
    expect(reply.body.rejected).toEqual([]);
    expect(reply.body.failed).toEqual([]);
    await vi.waitFor(() => expect([isAlive(first.pid), isAlive(second.pid)]).toEqual([false, false]), {
      timeout: 10_000,
    });
    expect(isAlive(elsewhere.pid)).toBe(true);
    await vi.waitFor(() => expect(store.getTask(first.id, 'busy')?.stopInitiator).toBe('user'));

    await vi.waitFor(async () => {
      const again = await call('/api/commands', { type: 'stopAllBackgroundWork', sessionId: 'busy' });
      expect([again.status, again.body.fault]).toEqual([
        409,
        'fault.command.backgroundWorkCancelRejected.not_running',
      ]);
    });
    const unknown = await call('/api/commands', { type: 'stopAllBackgroundWork', sessionId: 'nobody' });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'SESSION_NOT_FOUND']);
    const invalid = await call('/api/commands', { type: 'stopAllBackgroundWork', sessionId: 'a/b' });
    expect([invalid.status, invalid.body.error.code]).toEqual([400, 'MISSING_SESSION_ID']);
  });

  it('moves a running foreground command to the background; its tool call returns and its card follows it', async () => {
    const home = temporaryHome();
    const store = openStore(home);
    const model = scriptedModel([
      { toolCalls: [{ name: 'bash', id: 'call_fg', input: { command: 'sleep 30; echo late' } }] },
      { text: 'It moved to the background.' },
    ]);
    const runtime = await startRuntime(store, home, model);
    const session = runtime.createSession({ id: 'main' });
    const { call } = await serve(runtime.dashboard);
    const turn = session.send('run the slow command');

    const foreground = await vi.waitFor(
      async () => {
        const { body } = await call('/api/sessions/main/conversation');
        expect(body.foreground).toHaveLength(1);
        return body.foreground[0];
      },
      { timeout: 10_000 },
    );
    expect(foreground).toMatchObject({ toolCallId: 'call_fg', taskKind: 'bash', canMoveToBackground: true });
    const moved = await call('/api/commands', { type: 'moveToBackground', workId: foreground.workId });
    expect(moved).toEqual({
      status: 200,
      body: { type: 'ack', command: 'moveToBackground', workId: foreground.workId, ok: true },
    });
    expect((await turn).text).toBe('It moved to the background.');

    const works = await call('/api/sessions/main/background-works');
    expect(works.body.backgroundWorks).toEqual([
      expect.objectContaining({ workId: foreground.workId, toolUseId: 'call_fg', state: 'running' }),
    ]);
    const conversation = (await call('/api/sessions/main/conversation')).body;
    expect(conversation.foreground).toEqual([]);
    const result = conversation.messages.flatMap(
      (message: { toolResults: unknown[] }) => message.toolResults,
    )[0];
    expect(result).toMatchObject({ toolCallId: 'call_fg', isError: false });
    expect(result.text).toContain(foreground.workId);

    const again = await call('/api/commands', { type: 'moveToBackground', workId: foreground.workId });
    expect([again.status, again.body.fault]).toEqual([
      409,
      'fault.command.moveToBackgroundRejected.not_running',
    ]);
    const missing = await call('/api/commands', { type: 'moveToBackground', workId: 'bash-999' });
    expect([missing.status, missing.body.fault]).toEqual([
      404,
      'fault.command.moveToBackgroundRejected.not_found',
    ]);
  });
});

describe('the conversation endpoint', () => {
  it('pages back from the newest messages, reads newer ones after a seq, and shows delivered notifications', async () => {
    const home = temporaryHome();
    const store = openStore(home);
    const model = scriptedModel([
      {
        toolCalls: [
          {
            name: 'bash',
            id: 'call_echo',
            // Ends once the first turn is over (the gate), so its notification starts a turn of its own.
            input: {
              command: 'while [ ! -e gate ]; do sleep 0.01; done; echo hi; exit 3',
              run_in_background: true,
            },
          },
        ],
      },
      { text: 'Started.' },
      { text: 'It failed with 3.' },
    ]);
    const runtime = await startRuntime(store, home, model);
    const session = runtime.createSession({ id: 'main' });
    const ended = new Promise<void>((resolve) => {
      const stop = session.on((event) => {
        if (event.type === 'turn-end' && event.text === 'It failed with 3.') {
          stop();
          resolve();
        }
      });
    });
    await session.send('echo something');
    writeFileSync(join(home, 'gate'), '');
    await ended;
    const { call } = await serve(runtime.dashboard);

    const all = (await call('/api/sessions/main/conversation')).body;
    expect(all).toMatchObject({ sessionId: 'main', available: true, hasOlder: false, foreground: [] });
    const roles = all.messages.map(
      (message: { role: string; source: string }) => `${message.role}:${message.source}`,
    );
    expect(roles).toEqual([
      'user:user',
      'assistant:assistant',
      'tool:tool',
      'assistant:assistant',
      'user:background_task',
      'assistant:assistant',
    ]);
    expect(all.messages[1].toolCalls).toEqual([
      {
        id: 'call_echo',
        name: 'bash',
        summary: 'while [ ! -e gate ]; do sleep 0.01; done; echo hi; exit 3',
        description: null,
      },
    ]);
    const delivered = all.messages[4];
    expect(delivered.visibility).toBe('model-only');
    expect(delivered.notifications).toEqual([
      expect.objectContaining({ toolUseId: 'call_echo', status: 'failed', exitCode: 3 }),
    ]);

    const seqs = all.messages.map((message: { seq: number }) => message.seq);
    const newest = (await call('/api/sessions/main/conversation?limit=2')).body;
    expect(newest.messages.map((message: { seq: number }) => message.seq)).toEqual(seqs.slice(-2));
    expect(newest.hasOlder).toBe(true);
    const older = (await call(`/api/sessions/main/conversation?limit=3&before=${seqs.at(-2)}`)).body;
    expect(older.messages.map((message: { seq: number }) => message.seq)).toEqual(seqs.slice(-5, -2));
    expect(older.hasOlder).toBe(true);
    const first = (await call(`/api/sessions/main/conversation?limit=3&before=${seqs[1]}`)).body;
    expect([first.messages.length, first.hasOlder]).toEqual([1, false]);
    const after = (await call(`/api/sessions/main/conversation?after=${seqs.at(-3)}`)).body;
    expect(after.messages.map((message: { seq: number }) => message.seq)).toEqual(seqs.slice(-2));

    for (const query of ['limit=0', 'limit=201', 'limit=x', 'before=-1', 'after=1&before=3']) {
      const bad = await call(`/api/sessions/main/conversation?${query}`);
      expect([query, bad.status, bad.body.error.code]).toEqual([query, 400, 'INVALID_QUERY']);
    }
    expect((await call('/api/sessions/nobody/conversation')).status).toBe(404);
  });
});

describe('control by hand through the store (errand serve)', () => {
  it('stops all and moves to background through runtime commands the holding runtime answers', async () => {
    const home = temporaryHome();
    const store = openStore(home);
    const model = scriptedModel();
    const runtime = await startRuntime(store, home, model);
    runtime.createSession({ id: 'main' });
    const first = await startBackgroundSleep(runtime, model, 'main');
    const second = await startBackgroundSleep(runtime, model, 'main');
    const viewerStore = openSqliteSessionStore({ home });
    cleanups.push(() => viewerStore.close());
    const backend = createStoreDashboardBackend({ store: viewerStore, pollMs: 20, logger: { warn() {} } });
    cleanups.push(() => backend.dispose());
    const { call } = await serve(backend);

    const sessions = (await call('/api/sessions')).body.sessions;
    expect(sessions).toEqual([
      expect.objectContaining({ id: 'main', group: 'running', own: false, live: true }),
    ]);
    const stopped = await call('/api/commands', { type: 'stopAllBackgroundWork', sessionId: 'main' });
    expect(stopped.status).toBe(200);
    expect([...stopped.body.stopped].sort()).toEqual([first.id, second.id].sort());
    await vi.waitFor(() => expect([isAlive(first.pid), isAlive(second.pid)]).toEqual([false, false]), {
      timeout: 10_000,
    });
    const commands = [1, 2].map((id) => viewerStore.getCommand(id));
    expect(commands.map((command) => [command?.type, command?.state])).toEqual([
      ['cancel_background_work', 'acknowledged'],
      ['cancel_background_work', 'acknowledged'],
    ]);

    // The model is told of both stops in a turn of their own; the next steps are for the next input.
    const session = runtime.sessions.getSession('main')!;
    await vi.waitFor(() => {
      const told = store.listLedger('main').filter((entry) => entry.kind === 'notification');
      expect(told.map((entry) => entry.state)).toEqual(['delivered', 'delivered']);
    });
    await session.whenIdle();
    model.push(
      { toolCalls: [{ name: 'bash', id: 'call_slow', input: { command: 'sleep 30' } }] },
      { text: 'Moved on.' },
    );
    const turn = session.send('run it in the foreground');
    const foreground = await vi.waitFor(
      async () => {
        const { body } = await call('/api/sessions/main/conversation');
        expect(body.foreground).toHaveLength(1);
        return body.foreground[0];
      },
      { timeout: 10_000 },
    );
    expect(foreground).toMatchObject({ toolCallId: 'call_slow', canMoveToBackground: true });
    const moved = await call('/api/commands', { type: 'moveToBackground', workId: foreground.workId });
    expect(moved.status).toBe(200);
    expect((await turn).text).toBe('Moved on.');
    expect(viewerStore.getCommand(3)).toMatchObject({ type: 'move_to_background', state: 'acknowledged' });
    await vi.waitFor(async () => {
      const works = (await call('/api/sessions/main/background-works')).body.backgroundWorks;
      expect(works).toContainEqual(
        expect.objectContaining({ workId: foreground.workId, state: 'running', toolUseId: 'call_slow' }),
      );
    });
  });
});
