/**
 * A schedule survives its runtime being killed: a real child process runs `createErrandRuntime` on a real
 * SQLite file with a model behind a real HTTP endpoint; "every 2 s, 3 times" is started, the process is
 * SIGKILLed (between two firings — restarted after the next due time, or at once — or while a firing's turn
 * waits for the model), and a new process
 * resumes the session from the same file. What the store and the endpoint saw is counted: every firing is
 * told to the model exactly once (one stored automated-turn prompt and one model request each), none
 * runs twice, the missed-firing policy or the interruption is told once, and the schedule ends completed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { completion, type FakeEndpoint, fakeOpenAiEndpoint } from '../../test/support/fake-openai.js';
import { openSqliteSessionStore, type SqliteSessionStore } from '../store/index.js';

const CHILD = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'test',
  'fixtures',
  'host',
  'schedule-child.mjs',
);
const WAIT = { timeout: 60_000, interval: 50 };

interface Child {
  readonly process: ChildProcess;
  readonly sessionId: string;
  kill(): Promise<void>;
}

const children: Child[] = [];
let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const child of children.splice(0)) await child.kill();
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function startChild(config: Record<string, unknown>): Promise<Child> {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const sessionId = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /READY (\S+)\n/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the runtime child exited early (${code}): ${stderr}`)));
  });
  const handle: Child = {
    process: child,
    sessionId,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  children.push(handle);
  return handle;
}

/** The automated-turn prompts the store holds for the session, as text. */
function automatedPrompts(store: SqliteSessionStore, sessionId: string): string[] {
  return store
    .listMessages(sessionId)
    .filter((message) => message.role === 'user')
    .map((message) => JSON.stringify(message.content))
    .filter((text) => text.includes('[automated turn: schedule-1 fired ('));
}

/** The firing number each model request answered (its last user message's). */
function requestFirings(endpoint: FakeEndpoint): string[] {
  return endpoint.bodies.map((body) => {
    const messages = body.messages as Array<{ role: string; content?: unknown }>;
    const last = [...messages].reverse().find((message) => message.role === 'user');
    return /fired \((\d+) of 3/.exec(String(last?.content ?? ''))?.[1] ?? '?';
  });
}

/** The ledger holds the schedule's ending once (quiet: each firing was its own turn), and nothing else of it. */
function expectOneEnding(store: SqliteSessionStore, sessionId: string): void {
  const entries = store.listLedger(sessionId).filter((entry) => entry.taskId === 'schedule-1');
  expect(entries).toHaveLength(1);
  expect(entries[0]?.text).toContain('completed');
}

function setup(replies: Parameters<typeof fakeOpenAiEndpoint>[0]) {
  const home = mkdtempSync(join(tmpdir(), 'errand-schedule-restart-'));
  return { home, endpoint: fakeOpenAiEndpoint(replies) };
}

const DEFINITION = { prompt: 'Check the deploy.', every_ms: 2000, times: 3, missed: 'run_once' };
const answer = (text: string) => () => completion({ content: text }, 'stop');

/** A runtime child on "every 2 s, 3 times", SIGKILLed once its first firing is in the store. */
async function killedAfterFirstFiring() {
  const { home, endpoint: opening } = setup(['one', 'two', 'three', 'extra'].map(answer));
  const endpoint = await opening;
  cleanups.push(() => endpoint.close());
  const first = await startChild({ home, modelUrl: endpoint.url, schedule: DEFINITION });
  const store = openSqliteSessionStore({ home });
  cleanups.push(() => store.close());
  const { sessionId } = first;
  await vi.waitFor(
    () => expect(store.getSchedule(sessionId, 'schedule-1')).toMatchObject({ fired: 1 }),
    WAIT,
  );
  await first.kill();
  return { home, endpoint, store, sessionId };
}

describe('a schedule across a SIGKILL of its runtime', () => {
  it('killed between two firings: three firings in all, each told once, the missed one run once and told', async () => {
    const { home, endpoint, store, sessionId } = await killedAfterFirstFiring();
    const left = store.getSchedule(sessionId, 'schedule-1')!;
    expect(left).toMatchObject({ fired: 1, firing: undefined });
    expect(store.getTask('schedule-1', sessionId)?.status).toBe('running');
    // Down past the second firing's due time, so it is missed for certain.
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(left.nextAt! + 200), WAIT);

    await startChild({ home, modelUrl: endpoint.url, sessionId, resume: true });
    await vi.waitFor(() => expect(store.getTask('schedule-1', sessionId)?.status).toBe('completed'), WAIT);
    const prompts = automatedPrompts(store, sessionId);
    expect(prompts.map((prompt) => /fired \((\d) of 3/.exec(prompt)?.[1])).toEqual(['1', '2', '3']);
    const told = prompts.filter((prompt) =>
      prompt.includes('missed-firing policy \\"run_once\\": ran once now'),
    );
    expect(told).toHaveLength(1);
    expect(told[0]).toContain('fired (2 of 3');
    expect(requestFirings(endpoint)).toEqual(['1', '2', '3']);
    expect(endpoint.bodies).toHaveLength(3);
    expect(store.getTask('schedule-1', sessionId)).toMatchObject({
      status: 'completed',
      detail: { fired: 3 },
    });
    await vi.waitFor(() => expect(store.getSchedule(sessionId, 'schedule-1')).toBeUndefined(), WAIT);
    await vi.waitFor(() => expectOneEnding(store, sessionId), WAIT);
  });

  it('killed between two firings and started again at once: the rest fire on time or run once, three in all', async () => {
    const { home, endpoint, store, sessionId } = await killedAfterFirstFiring();
    await startChild({ home, modelUrl: endpoint.url, sessionId, resume: true });
    await vi.waitFor(() => expect(store.getTask('schedule-1', sessionId)?.status).toBe('completed'), WAIT);
    const prompts = automatedPrompts(store, sessionId);
    expect(prompts.map((prompt) => /fired \((\d) of 3/.exec(prompt)?.[1])).toEqual(['1', '2', '3']);
    // Whether the second firing came due before the new process was up depends on the machine: told at most once.
    expect(prompts.filter((prompt) => prompt.includes('missed-firing policy')).length).toBeLessThanOrEqual(1);
    expect(requestFirings(endpoint)).toEqual(['1', '2', '3']);
    // The ending reaches the conversation after the task record settles: wait for it, then it is there once.
    await vi.waitFor(() => expectOneEnding(store, sessionId), WAIT);
  });

  it("killed while a firing's turn waits for the model: told as interrupted once, never run again", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { home, endpoint: opening } = setup([
      // The first firing's model request never answers before the kill.
      () => ({ stream: [held] }),
      ...['two', 'three', 'extra'].map(answer),
    ]);
    const endpoint = await opening;
    cleanups.push(async () => {
      release();
      await endpoint.close();
    });
    const first = await startChild({ home, modelUrl: endpoint.url, schedule: DEFINITION });
    const store = openSqliteSessionStore({ home });
    cleanups.push(() => store.close());
    const { sessionId } = first;
    await vi.waitFor(() => expect(endpoint.bodies).toHaveLength(1), WAIT);
    expect(store.getSchedule(sessionId, 'schedule-1')).toMatchObject({ fired: 0, firing: 1 });
    await first.kill();

    await startChild({ home, modelUrl: endpoint.url, sessionId, resume: true });
    await vi.waitFor(() => expect(store.getTask('schedule-1', sessionId)?.status).toBe('completed'), WAIT);
    const prompts = automatedPrompts(store, sessionId);
    expect(prompts.map((prompt) => /fired \((\d) of 3/.exec(prompt)?.[1])).toEqual(['1', '2', '3']);
    const interrupted = prompts.filter((prompt) => prompt.includes('Firing 1 was interrupted'));
    expect(interrupted).toHaveLength(1);
    expect(interrupted[0]).toContain('fired (2 of 3');
    expect(requestFirings(endpoint)).toEqual(['1', '2', '3']);
    expect(store.getTask('schedule-1', sessionId)).toMatchObject({
      status: 'completed',
      detail: { fired: 3 },
    });
    await vi.waitFor(() => expect(store.getSchedule(sessionId, 'schedule-1')).toBeUndefined(), WAIT);
    await vi.waitFor(() => expectOneEnding(store, sessionId), WAIT);
  });
});
