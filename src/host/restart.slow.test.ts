/**
 * A restart, from outside: a library host (a child process on a SQLite home) is killed with SIGKILL,
 * then a new runtime resumes its session. What the resume says about each task must be what is true,
 * checked against the process table and the status files: durable commands are re-attached (same id,
 * owner and cursor, one notification with the right exit code), a leftover non-durable tree is stopped
 * and settled `killed`, a pid reused by another process is never signalled, and only what cannot be
 * known is `lost`, with its case.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  CRASH_MARK_VARIABLE,
  isRunning,
  killMarked,
  markedPids,
  newMark,
  type RuntimeChild,
  startRuntimeChild,
} from '../../test/support/crash.js';
import { outputFileBeside, procfsSource } from '../process/index.js';
import type { BashFacts } from '../producers/bash/index.js';
import { createStoreDashboardBackend } from '../server/index.js';
import { createSessionRuntime } from '../session/index.js';
import { openSqliteSessionStore, type SessionStore } from '../store/index.js';
import { createTrustedCaller, type TaskSnapshot } from '../tasks/index.js';
import { scriptedModel } from '../testing/index.js';
import { executeTool } from '../tools/index.js';
import { createErrandRuntime, type ErrandRuntime } from './errand-runtime.js';

const homes: string[] = [];
const marks: string[] = [];
const cleanups: Array<() => unknown> = [];
const trusted = createTrustedCaller('restart-test');
const quiet = { warn() {} };

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const mark of marks.splice(0)) killMarked(mark);
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

function temporaryHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'errand-restart-'));
  homes.push(home);
  return home;
}

function mark(): string {
  const value = newMark();
  marks.push(value);
  return value;
}

async function resumedRuntime(home: string, durable = false): Promise<ErrandRuntime> {
  const runtime = await createErrandRuntime({
    model: scriptedModel([]),
    home,
    pty: false,
    subagents: false,
    durable,
    // Notifications stay queued in the ledger, where the test reads them.
    notifications: { wakeBudget: 0 },
    commandPollMs: 20,
    logger: quiet,
  });
  cleanups.push(() => runtime.dispose());
  return runtime;
}

/** The texts of the queued notifications about `taskId`. */
function queuedAbout(store: SessionStore, sessionId: string, taskId: string): string[] {
  return store
    .listQueued(sessionId)
    .filter((entry) => entry.taskId === taskId)
    .map((entry) => entry.text);
}

function settledTask(runtime: ErrandRuntime, taskId: string): Promise<TaskSnapshot> {
  return vi.waitFor(
    () => {
      const task = runtime.tasks.get(taskId, trusted);
      if (task.status === 'running' || task.status === 'stopping')
        throw new Error(`${taskId} still ${task.status}`);
      return task;
    },
    { timeout: 10_000, interval: 20 },
  );
}

function taskOutput(runtime: ErrandRuntime, sessionId: string, taskId: string): Promise<string> {
  const session = runtime.sessions.getSession(sessionId)!;
  const tool = runtime.taskTools.tools.find((candidate) => candidate.name === 'task_output')!;
  return executeTool(
    tool,
    { task_id: taskId },
    {
      caller: session.owner,
      toolCallId: `read-${taskId}`,
      signal: new AbortController().signal,
    },
  ).then((result) => result.text);
}

/**
 * Resumes `sessionId` in a session runtime on its own (no start-up sweep: the resume's reconcile finds
 * what runs), checks that none of `ids` is called lost, and returns each once it settled.
 */
/**
 * Kills a host's lifeline sidecar and the host, leaving nothing to stop their trees. The sidecar is frozen
 * first: a host that saw its sidecar exit would start another before it died itself.
 */
async function killSidecarThenHost(host: RuntimeChild): Promise<void> {
  const sidecar = host.lifelinePid!;
  process.kill(sidecar, 'SIGSTOP');
  await host.kill();
  process.kill(sidecar, 'SIGKILL');
  await vi.waitFor(() => expect(isRunning(sidecar)).toBe(false), { timeout: 5000 });
}

async function reconciledLeftovers(
  home: string,
  sessionId: string,
  ids: readonly string[],
): Promise<TaskSnapshot[]> {
  const store = openSqliteSessionStore({ home });
  const runtime = createSessionRuntime({
    store,
    model: scriptedModel([]),
    logger: quiet,
    notifications: { wakeBudget: 0 },
    reconcile: { killGraceMs: 200 },
  });
  runtime.tasks.attachController('restart-test');
  cleanups.push(async () => {
    await runtime.dispose();
    store.close();
  });
  const session = runtime.resumeSession(sessionId);
  // Checked and found running: being stopped, not said to be gone.
  for (const id of ids) expect(runtime.tasks.get(id, session.owner).status).not.toBe('lost');
  const ended: TaskSnapshot[] = [];
  for (const id of ids) {
    ended.push(
      await vi.waitFor(
        () => {
          const task = runtime.tasks.get(id, session.owner);
          if (task.status === 'running' || task.status === 'stopping') throw new Error('still running');
          return task;
        },
        { timeout: 10_000 },
      ),
    );
  }
  return ended;
}

describe('resuming after the runtime was killed', () => {
  it('re-attaches a durable command: same id and owner, output from the model’s cursor, one notification with its exit code', async () => {
    const home = temporaryHome();
    const go = join(home, 'go');
    const end = join(home, 'end');
    const crash = mark();
    const command = `echo before; until [ -e ${go} ]; do sleep 0.02; done; echo after; until [ -e ${end} ]; do sleep 0.02; done; exit 3`;
    const host = await startRuntimeChild(
      { home, durable: true, commands: [command], ready: 'before', readFirst: true },
      crash,
    );
    const [[taskId, pid]] = [...host.tasks];
    await host.kill();
    // Durable: nothing stopped it.
    expect(isRunning(pid!)).toBe(true);

    const runtime = await resumedRuntime(home, true);
    const session = runtime.resumeSession(host.sessionId);
    const task = runtime.tasks.get(taskId!, session.owner);
    expect(task).toMatchObject({ id: taskId, status: 'running', ownerSessionId: host.sessionId });
    // A dashboard over the data directory sees it live across the restart.
    const backend = createStoreDashboardBackend({ store: openSqliteSessionStore({ home }), logger: quiet });
    cleanups.push(() => backend.dispose());
    expect(backend.events.find(taskId!)?.status).toBe('running');

    writeFileSync(go, '');
    const read = await vi.waitFor(
      async () => {
        const text = await taskOutput(runtime, session.id, taskId!);
        if (!text.includes('after')) throw new Error(`no "after" yet: ${text}`);
        return text;
      },
      { timeout: 10_000, interval: 30 },
    );
    // The model had read "before" already: it is not read again.
    expect(read).not.toContain('before');

    writeFileSync(end, '');
    const ended = await settledTask(runtime, taskId!);
    expect(ended).toMatchObject({ status: 'failed', detail: expect.objectContaining({ exitCode: 3 }) });
    await vi.waitFor(() => expect(queuedAbout(runtime.store, session.id, taskId!)).toHaveLength(1), {
      timeout: 5000,
    });
    expect(queuedAbout(runtime.store, session.id, taskId!)[0]).toContain('<exit-code>3</exit-code>');
    backend.refresh();
    expect(backend.events.find(taskId!)?.status).toBe('failed');
  });

  it('settles a durable command that ended while no runtime watched with its captured exit code, once', async () => {
    const home = temporaryHome();
    const end = join(home, 'end');
    const crash = mark();
    const host = await startRuntimeChild(
      {
        home,
        durable: true,
        commands: [`echo ready; until [ -e ${end} ]; do sleep 0.02; done; exit 7`],
        ready: 'ready',
      },
      crash,
    );
    const [[taskId]] = [...host.tasks];
    await host.kill();
    writeFileSync(end, '');
    const store = openSqliteSessionStore({ home });
    cleanups.push(() => store.close());
    const statusFile = store.getTask(taskId!, host.sessionId)!.statusFile!;
    await vi.waitFor(() => expect(readFileSync(statusFile, 'utf8')).toContain('"exitCode":7'), {
      timeout: 5000,
    });
    // The wrapper writes the status, then exits.
    await vi.waitFor(() => expect(markedPids(crash)).toEqual([]), { timeout: 5000 });

    const runtime = await resumedRuntime(home);
    const session = runtime.resumeSession(host.sessionId);
    const ended = await settledTask(runtime, taskId!);
    expect(ended).toMatchObject({ status: 'failed', detail: expect.objectContaining({ exitCode: 7 }) });
    await vi.waitFor(() => expect(queuedAbout(runtime.store, session.id, taskId!)).toHaveLength(1));
    expect(await taskOutput(runtime, session.id, taskId!)).toContain('ready');
  });

  it('calls a durable command whose wrapper was killed lost, saying its status was not captured', async () => {
    const home = temporaryHome();
    const crash = mark();
    const host = await startRuntimeChild(
      { home, durable: true, commands: ['echo ready; exec sleep 1000'], ready: 'ready' },
      crash,
    );
    const [[taskId]] = [...host.tasks];
    await host.kill();
    for (const pid of markedPids(crash)) process.kill(pid, 'SIGKILL');
    await vi.waitFor(() => expect(markedPids(crash)).toEqual([]));

    const runtime = await resumedRuntime(home);
    const session = runtime.resumeSession(host.sessionId);
    expect(runtime.store.getTask(taskId!, session.id)).toMatchObject({
      status: 'lost',
      detail: expect.objectContaining({ lostCase: 'status_not_captured' }),
    });
    const [notice] = queuedAbout(runtime.store, session.id, taskId!);
    expect(notice).toContain('its exit status was not captured (its wrapper was killed)');
  });

  it('settles work its lifeline stopped as killed (runtime_died), never as still running', async () => {
    const home = temporaryHome();
    const crash = mark();
    const host = await startRuntimeChild(
      { home, commands: ['echo ready; exec sleep 1000'], ready: 'ready' },
      crash,
    );
    const [[taskId]] = [...host.tasks];
    await host.kill();
    await vi.waitFor(() => expect(markedPids(crash)).toEqual([]), { timeout: 5000 });

    const runtime = await resumedRuntime(home);
    const session = runtime.resumeSession(host.sessionId);
    const ended = await settledTask(runtime, taskId!);
    expect(ended).toMatchObject({
      status: 'killed',
      detail: expect.objectContaining({ reason: 'runtime_died' }),
    });
    await vi.waitFor(() => expect(queuedAbout(runtime.store, session.id, taskId!)).toHaveLength(1));
    const [text] = queuedAbout(runtime.store, session.id, taskId!);
    expect(text).toContain('runtime_died');
    expect(text).not.toContain('not running any more');
  });

  it('stops a non-durable tree a dead runtime left running and settles it killed (runtime_restarted)', async () => {
    const home = temporaryHome();
    const crash = mark();
    // No lifeline: the tree outlives the runtime, as if its sidecar had died with it.
    const host = await startRuntimeChild(
      {
        home,
        lifeline: false,
        commands: ['echo ready; exec sleep 1000', 'bash -c "trap \\"\\" TERM; echo ready; exec sleep 1000"'],
        ready: 'ready',
      },
      crash,
    );
    const ids = [...host.tasks.keys()];
    await host.kill();
    expect(markedPids(crash).length).toBeGreaterThanOrEqual(2);

    for (const ended of await reconciledLeftovers(home, host.sessionId, ids)) {
      expect(ended).toMatchObject({
        status: 'killed',
        detail: expect.objectContaining({ reason: 'runtime_restarted' }),
      });
    }
    expect(markedPids(crash)).toEqual([]);
  });

  it('a new runtime’s start stops such leftovers even before any resume, and the resume says why', async () => {
    const home = temporaryHome();
    const crash = mark();
    const host = await startRuntimeChild(
      { home, lifeline: false, commands: ['echo ready; exec sleep 1000'], ready: 'ready' },
      crash,
    );
    const [[taskId]] = [...host.tasks];
    await host.kill();
    expect(markedPids(crash).length).toBe(1);
    const runtime = await resumedRuntime(home);
    await vi.waitFor(() => expect(markedPids(crash)).toEqual([]), { timeout: 5000 });
    runtime.resumeSession(host.sessionId);
    const ended = await settledTask(runtime, taskId!);
    expect(ended).toMatchObject({
      status: 'killed',
      detail: expect.objectContaining({ reason: 'runtime_restarted' }),
    });
  });

  it('never signals a pid reused by another process, and calls the task lost with that case', async () => {
    const home = temporaryHome();
    const crash = mark();
    const stranger = spawn('sleep', ['1000'], {
      stdio: 'ignore',
      env: { ...process.env, [CRASH_MARK_VARIABLE]: crash },
    });
    await new Promise((resolve) => stranger.once('spawn', resolve));
    const source = procfsSource();
    const strangerStart = await vi.waitFor(() => source.read(stranger.pid!)!.startTime);
    const store = openSqliteSessionStore({ home });
    store.createSession({ id: 's-reused', cwd: home });
    const record = (id: string, process: { pid: number; startTime: number; bootId: string }) =>
      store.upsertTask({
        id,
        sessionId: 's-reused',
        kind: 'bash',
        label: `sleep ${id}`,
        status: 'running',
        isBackgrounded: true,
        branchGeneration: 0,
        startedAt: 1,
        reported: false,
        detail: { command: 'sleep 1000' } as BashFacts,
        process: { ...process, tag: `ERRAND_PROCESS_TAG=${id}` },
      });
    // The recorded process started earlier than the one that now has its pid.
    record('bash-1', { pid: stranger.pid!, startTime: strangerStart - 50, bootId: source.bootId!()! });
    record('bash-2', { pid: stranger.pid!, startTime: strangerStart, bootId: 'another-boot' });
    store.close();

    const runtime = await resumedRuntime(home);
    const session = runtime.resumeSession('s-reused');
    const reused = runtime.store.getTask('bash-1', 's-reused')!;
    expect(reused).toMatchObject({
      status: 'lost',
      detail: expect.objectContaining({ lostCase: 'pid_reused' }),
    });
    expect(runtime.store.getTask('bash-2', 's-reused')).toMatchObject({
      status: 'lost',
      detail: expect.objectContaining({ lostCase: 'machine_restarted' }),
    });
    expect(isRunning(stranger.pid!)).toBe(true);
    const texts = runtime.store.listQueued(session.id).map((entry) => entry.text);
    expect(texts.find((text) => text.includes('bash-1'))).toContain('its pid now names another process');
    expect(texts.find((text) => text.includes('bash-2'))).toContain('the machine restarted');
    stranger.kill('SIGKILL');
  });
});

describe('resuming after the runtime was killed before its commands’ process facts reached the store', () => {
  /**
   * Commands in a runtime whose process facts (start times) and output files wait a minute for their
   * write: it is killed with the records holding the trees' pids, tags and status files only. The first
   * command has printed a line to its output file.
   */
  async function killedBeforePids(crash: string, home: string) {
    const host = await startRuntimeChild(
      {
        home,
        processFactsDelayMs: 60_000,
        factsStored: false,
        commands: ['echo early-output; exec sleep 1000', 'sleep 1000 & sleep 1000 & wait'],
      },
      crash,
    );
    const ids = [...host.tasks.keys()];
    expect(markedPids(crash).length).toBeGreaterThanOrEqual(3);
    const store = openSqliteSessionStore({ home });
    const records = ids.map((id) => store.getTask(id, host.sessionId)!);
    store.close();
    for (const record of records) {
      expect(record.process).toMatchObject({ tag: expect.stringMatching(/=/) });
      expect(record.process?.startTime).toBeUndefined();
      expect(record.outputFile).toBeUndefined();
      expect(record.statusFile).toMatch(/\.status$/);
    }
    const output = outputFileBeside(records[0]!.statusFile!)!;
    await vi.waitFor(() => expect(readFileSync(output, 'utf8')).toBe('early-output\n'));
    return { host, ids };
  }

  async function settledAll(runtime: ErrandRuntime, ids: readonly string[]): Promise<TaskSnapshot[]> {
    return Promise.all(ids.map((id) => settledTask(runtime, id)));
  }

  it('settles the trees its lifeline stopped as killed (runtime_died), read from their status files', async () => {
    const home = temporaryHome();
    const crash = mark();
    const { host, ids } = await killedBeforePids(crash, home);
    await host.kill();
    await vi.waitFor(() => expect(markedPids(crash)).toEqual([]), { timeout: 5000 });

    const runtime = await resumedRuntime(home);
    const session = runtime.resumeSession(host.sessionId);
    for (const ended of await settledAll(runtime, ids)) {
      expect(ended).toMatchObject({
        status: 'killed',
        detail: expect.objectContaining({ reason: 'runtime_died' }),
      });
    }
    for (const id of ids) {
      await vi.waitFor(() => expect(queuedAbout(runtime.store, session.id, id)).toHaveLength(1));
      expect(queuedAbout(runtime.store, session.id, id)[0]).toContain('runtime_died');
    }
    // Its output is found beside its status file.
    expect(await taskOutput(runtime, session.id, ids[0]!)).toContain('early-output');
  });

  it('finds trees its lifeline could not stop by their tag, stops them, and settles them killed (runtime_restarted)', async () => {
    const home = temporaryHome();
    const crash = mark();
    const { host, ids } = await killedBeforePids(crash, home);
    // The sidecar and then the host: nothing is left to stop the trees.
    await killSidecarThenHost(host);
    const running = markedPids(crash);
    expect(running.length).toBeGreaterThanOrEqual(3);

    for (const ended of await reconciledLeftovers(home, host.sessionId, ids)) {
      expect(ended).toMatchObject({
        status: 'killed',
        error: expect.stringContaining('still running when its session was resumed'),
        detail: expect.objectContaining({ reason: 'runtime_restarted' }),
      });
    }
    expect(markedPids(crash)).toEqual([]);
  });

  it('a new runtime’s start stops such trees by their tag before any resume', async () => {
    const home = temporaryHome();
    const crash = mark();
    const { host, ids } = await killedBeforePids(crash, home);
    await killSidecarThenHost(host);
    expect(markedPids(crash).length).toBeGreaterThanOrEqual(3);
    const runtime = await resumedRuntime(home);
    await vi.waitFor(() => expect(markedPids(crash)).toEqual([]), { timeout: 5000 });
    runtime.resumeSession(host.sessionId);
    for (const ended of await settledAll(runtime, ids)) {
      expect(ended).toMatchObject({
        status: 'killed',
        detail: expect.objectContaining({ reason: 'runtime_restarted' }),
      });
    }
  });

  it('calls a tree that ended unwatched before its start time was stored lost (ended_unwatched), not running', async () => {
    const home = temporaryHome();
    const crash = mark();
    const { host, ids } = await killedBeforePids(crash, home);
    await killSidecarThenHost(host);
    // The trees end while no runtime watches and nothing records how.
    killMarked(crash);
    await vi.waitFor(() => expect(markedPids(crash)).toEqual([]), { timeout: 5000 });
    const runtime = await resumedRuntime(home);
    const session = runtime.resumeSession(host.sessionId);
    for (const id of ids) {
      expect(runtime.store.getTask(id, session.id)).toMatchObject({
        status: 'lost',
        detail: expect.objectContaining({ lostCase: 'ended_unwatched' }),
      });
    }
  });
});

describe('errand serve over work whose runtime is gone', () => {
  it('shows a durable command live and stops it; the resume then settles it killed', async () => {
    const home = temporaryHome();
    const crash = mark();
    const host = await startRuntimeChild(
      { home, durable: true, commands: ['echo ready; exec sleep 1000'], ready: 'ready' },
      crash,
    );
    const [[taskId, pid]] = [...host.tasks];
    await host.kill();
    const store = openSqliteSessionStore({ home });
    // The wrapper records the command's status after SIGTERM; a grace long enough for a loaded machine
    // keeps SIGKILL from reaching it first (the stop returns as soon as the tree is gone).
    const backend = createStoreDashboardBackend({ store, logger: quiet, killGraceMs: 10_000 });
    cleanups.push(() => {
      backend.dispose();
      store.close();
    });
    expect(backend.events.find(taskId!)).toMatchObject({ status: 'running', cancellable: true });
    expect(await backend.stopBackgroundWork(taskId!)).toEqual({ ok: true });
    expect(isRunning(pid!)).toBe(false);
    expect(backend.events.find(taskId!)?.status).toBe('killed');

    const runtime = await resumedRuntime(home);
    const session = runtime.resumeSession(host.sessionId);
    const ended = await settledTask(runtime, taskId!);
    expect(ended).toMatchObject({ status: 'killed', stopInitiator: 'user' });
    expect(ended.detail).toMatchObject({ reason: 'cancelled', exitCode: 143 });
    await vi.waitFor(() => expect(queuedAbout(runtime.store, session.id, taskId!)).toHaveLength(1));
  });

  it('stops a re-attached durable command through the runtime that resumed it', async () => {
    const home = temporaryHome();
    const crash = mark();
    const host = await startRuntimeChild(
      { home, durable: true, commands: ['echo ready; exec sleep 1000'], ready: 'ready' },
      crash,
    );
    const [[taskId, pid]] = [...host.tasks];
    await host.kill();
    const runtime = await resumedRuntime(home, true);
    runtime.resumeSession(host.sessionId);
    const backend = createStoreDashboardBackend({ store: openSqliteSessionStore({ home }), logger: quiet });
    cleanups.push(() => backend.dispose());
    expect(backend.events.find(taskId!)?.status).toBe('running');
    expect(await backend.stopBackgroundWork(taskId!)).toEqual({ ok: true });
    const ended = await settledTask(runtime, taskId!);
    expect(ended).toMatchObject({ status: 'killed', stopInitiator: 'user' });
    expect(isRunning(pid!)).toBe(false);
  });
});
