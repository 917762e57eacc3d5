/**
 * Growth curves: how Errand's costs move as the work it has seen grows. Each figure is measured in this
 * run, on the SQLite store (what a user gets by default), and each curve ends with its ratio (largest to
 * smallest):
 * (a) a notification turn (a background command's exit → the idle turn's model request) and a resume, in
 *     a session of 1k / 10k / 50k messages;
 * (b) one `errand serve` poll of the store and one `/api/sessions` read, with 10 / 100 / 1000 idle sessions;
 * (c) a runtime's start with 0 / 10k / 100k old task records in the store;
 * (d) the `task_list` tool's answer with 100 / 10k / 100k live tasks (bytes and time);
 * (e) a background `true` from its start to its end, through the assembled runtime, once a session has
 *     ended 100 (the first ones warm it up) / 1000 / 3000 tasks (1000 is the retention cap: from then on
 *     every ending evicts the oldest), and the runtime's disposal after the last point.
 * It writes the curves as an SVG chart to `BENCH_SVG` when set (`docs/images/scale.svg` is one), with the
 * curves of an earlier run beside them when `BENCH_BEFORE` names the JSON that run wrote to `BENCH_JSON`.
 * `BENCH_SCALE_MESSAGES`, `BENCH_SCALE_SESSIONS`, `BENCH_SCALE_RECORDS`, `BENCH_SCALE_TASKS`,
 * `BENCH_SCALE_ENDED` (comma lists) change the points.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import {
  type BackgroundTaskFacts,
  type BackgroundWorksStore,
  countBadgeWorks,
  hasRunningWork,
  toBackgroundWork,
} from '../src/events/index.js';
import { createErrandRuntime } from '../src/host/index.js';
import { createTaskService } from '../src/registry/index.js';
import { createDashboardServer, createStoreDashboardBackend } from '../src/server/index.js';
import { listSessionEntries, toSessionEntry } from '../src/server/session-list.js';
import type { ModelRequest } from '../src/session/index.js';
import { openSqliteSessionStore, type SessionStore } from '../src/store/index.js';
import { backgroundListingOf, createOwner, createTrustedCaller } from '../src/tasks/index.js';
import { scriptedModel, scriptedTask } from '../src/testing/index.js';
import { createTaskTools, executeTool } from '../src/tools/index.js';
import { type Curve, renderChart } from './scale-chart.js';

const points = (name: string, fallback: string) => (process.env[name] ?? fallback).split(',').map(Number);
const MESSAGES = points('BENCH_SCALE_MESSAGES', '1000,10000,50000');
const SESSIONS = points('BENCH_SCALE_SESSIONS', '10,100,1000');
const RECORDS = points('BENCH_SCALE_RECORDS', '0,10000,100000');
const LIVE_TASKS = points('BENCH_SCALE_TASKS', '100,10000,100000');
const ENDED_TASKS = points('BENCH_SCALE_ENDED', '100,1000,3000');
/** Task records of each session in (b) and (f). */
const TASKS_PER_SESSION = Number(process.env.BENCH_SCALE_TASKS_PER_SESSION ?? 10);
/** Background commands timed at each point of (e). */
const TIMED_STARTS = 200;
/** Resumes timed at each point of (a), each by a runtime of its own. */
const RESUME_ROUNDS = 11;
/** The parts to run (`BENCH_SCALE_PARTS=d,f`); all by default. */
const PARTS = new Set((process.env.BENCH_SCALE_PARTS ?? 'a,b,c,d,e,f').split(','));
const STAMP = 'date +%s%N';
const directories: string[] = [];
const epochMs = () => performance.timeOrigin + performance.now();

function freshHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'errand-scale-'));
  directories.push(home);
  return home;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function timed(body: () => void): number {
  const started = performance.now();
  body();
  return performance.now() - started;
}

function stampOf(text: string): number {
  const match = /(\d{16,})/.exec(text);
  if (!match) throw new Error(`no timestamp in output: ${JSON.stringify(text)}`);
  return Number(BigInt(match[1]!) / 1000n) / 1000;
}

const ms = (value: number) => `${value.toFixed(2)} ms`;

/** A finished, told background task record of `sessionId`. */
function taskRecord(sessionId: string, index: number, time: number) {
  return {
    id: `bash-${index + 1}`,
    sessionId,
    kind: 'bash',
    label: `job ${index}`,
    status: 'completed' as const,
    detail: { exitCode: 0 },
    isBackgrounded: true,
    branchGeneration: 0,
    startedAt: time,
    endedAt: time,
    reported: true,
  };
}

/**
 * A session of `count` messages as a long conversation leaves it: delivered notifications (each with its
 * ledger entry and its told task record) and the model's replies, in one transaction.
 */
function writeConversation(store: SessionStore, sessionId: string, count: number): void {
  store.transaction(() => {
    store.createSession({ id: sessionId, cwd: '/' });
    const time = Date.now();
    for (let index = 0; index < count / 2; index += 1) {
      const admitted = store.admit({
        sessionId,
        kind: 'notification',
        idempotencyKey: `old:${index}`,
        taskId: `bash_${index + 1}`,
        text: `<task-notification>job ${index} completed</task-notification>`,
      });
      store.commitDelivery(sessionId, [admitted.entry.id], {
        role: 'user',
        content: { text: admitted.entry.text },
        visibility: 'model-only',
        source: 'background_task',
      });
      store.appendMessage(sessionId, { role: 'assistant', content: { text: 'noted' }, source: 'assistant' });
      store.upsertTask(taskRecord(sessionId, index, time));
    }
  });
}

/** (a) A notification turn and a resume in a session of `count` messages. */
async function conversationPoint(
  count: number,
): Promise<{ turn: number; resume: number; firstTurn: number }> {
  const home = freshHome();
  const seed = openSqliteSessionStore({ home, synchronous: 'normal' });
  writeConversation(seed, 'long', count);
  seed.close();
  const resumes: number[] = [];
  // A resume is one synchronous call of a few ms: the median of several, the first (cold) left out.
  for (let round = 0; round < RESUME_ROUNDS; round += 1) {
    const store = openSqliteSessionStore({ home });
    const runtime = await createErrandRuntime({ model: scriptedModel([]), store, pty: false });
    try {
      resumes.push(timed(() => runtime.resumeSession('long')));
    } finally {
      await runtime.dispose();
      store.close();
    }
  }
  const store = openSqliteSessionStore({ home });
  let onRequest: ((at: number) => void) | undefined;
  const model = scriptedModel([], { name: 'scale' });
  for (let index = 0; index < 40; index += 1) {
    model.push((_request: ModelRequest) => {
      onRequest?.(epochMs());
      return { text: 'noted' };
    });
  }
  const runtime = await createErrandRuntime({
    model,
    store,
    pty: false,
    limits: { idleDrainQuietMs: 1 },
    notifications: { wakeBudget: Number.POSITIVE_INFINITY },
  });
  const turns: number[] = [];
  try {
    const session = runtime.resumeSession('long');
    await session.whenIdle();
    for (let round = 0; round < 15; round += 1) {
      const requested = new Promise<number>((resolve) => {
        onRequest = resolve;
      });
      const started = await runtime.bash.start({ command: STAMP, owner: session.owner, background: true });
      const at = await requested;
      turns.push(at - stampOf(runtime.outputSnapshot(started.taskId)?.text ?? ''));
      await session.whenIdle();
    }
  } finally {
    await runtime.dispose();
    store.close();
  }
  return { turn: median(turns.slice(3)), resume: median(resumes.slice(1)), firstTurn: turns[0]! };
}

/** A data directory with `count` idle sessions of `perSession` told task records each. */
function idleSessionsHome(count: number, perSession: number): string {
  const home = freshHome();
  // Written over time, as sessions are: one millisecond apart.
  let clock = Date.now() - 10 * count * (perSession + 1);
  const seed = openSqliteSessionStore({ home, synchronous: 'normal', now: () => clock++ });
  seed.transaction(() => {
    for (let index = 0; index < count; index += 1) {
      const sessionId = `idle-${index}`;
      seed.createSession({ id: sessionId, cwd: '/' });
      seed.appendMessage(sessionId, { role: 'user', content: { text: `hello ${index}` }, source: 'user' });
      for (let task = 0; task < perSession; task += 1)
        seed.upsertTask(taskRecord(sessionId, index * perSession + task, clock));
    }
  });
  seed.close();
  return home;
}

/** (b) `errand serve`'s poll and session list with `count` idle sessions (`perSession` told task records each). */
function servePoint(count: number, perSession: number): { poll: number; pollMax: number; list: number } {
  const store = openSqliteSessionStore({ home: idleSessionsHome(count, perSession) });
  const backend = createStoreDashboardBackend({ store, pollMs: 3_600_000 });
  try {
    const polls: number[] = [];
    for (let index = 0; index < 600; index += 1) polls.push(timed(() => backend.refresh()));
    const lists: number[] = [];
    for (let index = 0; index < 20; index += 1) lists.push(timed(() => backend.listSessions()));
    return { poll: median(polls), pollMax: Math.max(...polls), list: median(lists) };
  } finally {
    backend.dispose?.();
    store.close();
  }
}

/** Works of `sessions` sessions, `perSession` each (every other one running), as the dashboard holds them. */
function worksOf(sessions: readonly string[], perSession: number): BackgroundWorksStore {
  const works = new Map<string, ReturnType<typeof toBackgroundWork>>();
  sessions.forEach((sessionId, index) => {
    for (let task = 0; task < perSession; task += 1) {
      const running = task % 2 === 0;
      const facts: BackgroundTaskFacts = {
        sessionId,
        taskId: `bash-${index * perSession + task + 1}`,
        taskKind: 'bash',
        kind: 'bash',
        label: `job ${task}`,
        toolUseId: null,
        status: running ? 'running' : 'completed',
        cancellable: running,
        resultPending: false,
        attempt: 1,
        startedAt: index,
        endedAt: running ? null : index + 1,
        cancelRequestedAt: null,
        pid: null,
        outputBytes: null,
        tail: null,
        exitCode: running ? null : 0,
        signal: null,
        reason: null,
        error: null,
        sandbox: null,
        limits: null,
        schedule: null,
      };
      works.set(facts.taskId, toBackgroundWork(facts));
    }
  });
  const state = { works };
  return {
    state,
    hasRunningWork: (sessionId: string | null) => hasRunningWork(state, sessionId),
    badgeCount: (sessionId?: string | null) => countBadgeWorks(state, sessionId),
  } as unknown as BackgroundWorksStore;
}

/**
 * (b') `GET /api/sessions`' list with `count` sessions and `perSession` works each in the dashboard's
 * projection: the list as it is (one pass over the works) against the same list looked up one session at
 * a time (what it did before: sessions x works), in the same run.
 */
function sessionListPoint(count: number, perSession: number): { list: number; perSessionLookups: number } {
  const sessions = Array.from({ length: count }, (_, index) => ({ id: `s-${index}`, createdAt: index }));
  const works = worksOf(
    sessions.map((session) => session.id),
    perSession,
  );
  const lists: number[] = [];
  const lookups: number[] = [];
  for (let round = 0; round < 11; round += 1) {
    lists.push(timed(() => listSessionEntries(sessions, works)));
    lookups.push(timed(() => sessions.map((session) => toSessionEntry(session, works))));
  }
  return { list: median(lists), perSessionLookups: median(lookups) };
}

/** (c) A runtime's start (and dispose) with `count` old task records in its store. */
async function startPoint(count: number): Promise<number> {
  const home = freshHome();
  const seed = openSqliteSessionStore({ home, synchronous: 'normal' });
  seed.transaction(() => {
    seed.createSession({ id: 'old', cwd: '/' });
    const time = Date.now();
    for (let index = 0; index < count; index += 1) seed.upsertTask(taskRecord('old', index, time));
  });
  seed.close();
  const starts: number[] = [];
  for (let round = 0; round < 5; round += 1) {
    const store = openSqliteSessionStore({ home });
    const started = performance.now();
    const runtime = await createErrandRuntime({ model: scriptedModel([]), store, pty: false });
    starts.push(performance.now() - started);
    await runtime.dispose();
    store.close();
  }
  return median(starts.slice(1));
}

/**
 * (d) `task_list` with `count` live tasks of one owner: bytes of its answer, the time to build it, and
 * the time of what it read before the bounded listing (every task's snapshot, then the selection).
 */
async function taskListPoint(count: number): Promise<{ bytes: number; ms: number; fullReadMs: number }> {
  const tasks = createTaskService({ maxLiveTasks: count + 1, maxLiveTasksPerOwner: count + 1 });
  const tools = createTaskTools({ tasks });
  const owner = createOwner('scale');
  const running = [];
  for (let index = 0; index < count; index += 1) {
    const task = scriptedTask({ kind: 'bash', label: `npm run job-${index}`, owner });
    running.push(task);
    await tasks.start(task.spec);
  }
  let bytes = 0;
  const elapsed: number[] = [];
  const fullReads: number[] = [];
  for (let round = 0; round < 11; round += 1) {
    const started = performance.now();
    const result = await executeTool(
      tools.taskList,
      {},
      { caller: owner, toolCallId: `list-${round}`, signal: new AbortController().signal },
    );
    elapsed.push(performance.now() - started);
    bytes = Buffer.byteLength(result.text);
    const reading = performance.now();
    backgroundListingOf(tasks.list(owner), 50);
    fullReads.push(performance.now() - reading);
  }
  for (const task of running) task.settle();
  tools.dispose();
  return { bytes, ms: median(elapsed), fullReadMs: median(fullReads) };
}

/**
 * (e) Milliseconds per background `true`, start to end, after each number of ended tasks in `points`
 * (one runtime on the default options, one session), and the runtime's disposal after the last.
 */
async function historyCurve(points: readonly number[]): Promise<{ perTask: number[]; disposeMs: number }> {
  const home = freshHome();
  const store = openSqliteSessionStore({ home });
  const runtime = await createErrandRuntime({ model: scriptedModel([]), store, pty: false });
  const session = runtime.createSession({ id: 'history' });
  const trusted = createTrustedCaller('bench');
  const run = async () => {
    const { taskId } = await runtime.bash.start({ command: 'true', owner: session.owner, background: true });
    const task = await runtime.tasks.wait(taskId, 60_000, trusted);
    if (task.status !== 'completed') throw new Error(`task ${taskId} ended ${task.status}`);
  };
  const perTask: number[] = [];
  let ended = 0;
  for (const point of points) {
    for (; ended < point; ended += 1) await run();
    const started = performance.now();
    for (let index = 0; index < TIMED_STARTS; index += 1) await run();
    perTask.push((performance.now() - started) / TIMED_STARTS);
    ended += TIMED_STARTS;
  }
  const disposing = performance.now();
  await runtime.dispose();
  const disposeMs = performance.now() - disposing;
  store.close();
  return { perTask, disposeMs };
}

/** The Chromium-based browser (f) drives: $ERRAND_BROWSER, $CHROME_PATH, else one on PATH. */
function findBrowser(): string | undefined {
  for (const path of [process.env.ERRAND_BROWSER, process.env.CHROME_PATH]) {
    if (path) return path;
  }
  for (const command of ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']) {
    try {
      return execFileSync('which', [command], { encoding: 'utf8' }).trim() || undefined;
    } catch {
      // Not this one.
    }
  }
  return undefined;
}

/**
 * (f) The dashboard's first paint over `errand serve`'s backend with `count` idle sessions of
 * `perSession` task records each: from navigating a fresh page to every session's button drawn and the
 * event stream live (the median of several loads, the first left out).
 */
async function firstPaintPoint(browser: BrowserContext, count: number, perSession: number): Promise<number> {
  const store = openSqliteSessionStore({ home: idleSessionsHome(count, perSession) });
  const backend = createStoreDashboardBackend({ store, pollMs: 3_600_000 });
  // The page from the package's web/ (the bench runs compiled into .bench/, beside no web/ of its own).
  const server = createDashboardServer({
    backend,
    logger: { warn() {} },
    assetsDirectory: new URL('../../web/', import.meta.url).pathname,
  });
  try {
    const address = await server.listen();
    const paints: number[] = [];
    for (let round = 0; round < 6; round += 1) {
      const page = await browser.newPage();
      try {
        const started = performance.now();
        await page.goto(address.url);
        await page.locator('#connection', { hasText: 'Live' }).waitFor();
        // Every session drawn, or counted in the line of those not listed.
        await page.waitForFunction((expected) => {
          const { document } = globalThis as unknown as {
            document: {
              querySelectorAll(selector: string): { length: number };
              getElementById(id: string): { hidden: boolean; textContent: string | null } | null;
            };
          };
          const omitted = document.getElementById('sessions-omitted');
          const notListed =
            omitted === null || omitted.hidden ? 0 : Number.parseInt(omitted.textContent ?? '0', 10);
          return document.querySelectorAll('button[data-session-id]').length + notListed >= expected;
        }, count);
        paints.push(performance.now() - started);
      } finally {
        await page.close();
      }
    }
    return median(paints.slice(1));
  } finally {
    await server.close();
    backend.dispose?.();
    store.close();
  }
}

function ratioLine(label: string, values: number[], target?: number): string {
  const ratio = values.at(-1)! / values[0]!;
  const verdict =
    target === undefined ? '' : ` (target <= ${target}x: ${ratio <= target ? 'met' : 'MISSED'})`;
  return `    ${label}: ${ratio.toFixed(2)}x from the first point to the last${verdict}`;
}

async function main(): Promise<void> {
  console.log(`errand bench:scale — node ${process.version}, SQLite store`);
  const curves: Curve[] = [];
  if (PARTS.has('a')) {
    const turns: number[] = [];
    const resumes: number[] = [];
    const firstTurns: number[] = [];
    console.log('(a) a session of N messages');
    for (const count of MESSAGES) {
      const point = await conversationPoint(count);
      turns.push(point.turn);
      resumes.push(point.resume);
      firstTurns.push(point.firstTurn);
      console.log(
        `    ${String(count).padStart(6)} messages: notification turn ${ms(point.turn)}, resume ${ms(point.resume)}, the first turn after the resume ${ms(point.firstTurn)}`,
      );
    }
    console.log(ratioLine('notification turn', turns, 2));
    console.log(ratioLine('resume', resumes, 2));
    console.log(ratioLine('the first turn after a resume', firstTurns, 2));
    curves.push({ title: 'notification turn (ms) by messages', xs: MESSAGES, ys: turns });
    curves.push({ title: 'resume (ms) by messages', xs: MESSAGES, ys: resumes });
  }

  if (PARTS.has('b')) {
    const polls: number[] = [];
    const lists: number[] = [];
    console.log(`(b) errand serve with N idle sessions, ${TASKS_PER_SESSION} task records each`);
    for (const count of SESSIONS) {
      const point = servePoint(count, TASKS_PER_SESSION);
      polls.push(point.poll);
      lists.push(point.list);
      console.log(
        `    ${String(count).padStart(6)} sessions: poll ${ms(point.poll)} (slowest of 600: ${ms(point.pollMax)}; a full read happens only after records were deleted), /api/sessions ${ms(point.list)}`,
      );
    }
    console.log(ratioLine('poll', polls, 2));
    console.log(ratioLine('/api/sessions', lists));

    console.log(
      `(b') /api/sessions' list with N sessions x ${TASKS_PER_SESSION} works each (dashboard projection)`,
    );
    const sessionLists: number[] = [];
    for (const count of SESSIONS) {
      const point = sessionListPoint(count, TASKS_PER_SESSION);
      sessionLists.push(point.list);
      console.log(
        `    ${String(count).padStart(6)} sessions: one pass ${ms(point.list)}, one session at a time ${ms(point.perSessionLookups)} (${(point.perSessionLookups / point.list).toFixed(1)}x)`,
      );
    }
    console.log(ratioLine("/api/sessions' list with works", sessionLists));
    curves.push({ title: 'serve poll (ms) by idle sessions', xs: SESSIONS, ys: polls });
  }

  if (PARTS.has('c')) {
    const starts: number[] = [];
    console.log('(c) runtime start with N old task records');
    for (const count of RECORDS) {
      const start = await startPoint(count);
      starts.push(start);
      console.log(`    ${String(count).padStart(6)} records: start ${ms(start)}`);
    }
    const growth = starts.at(-1)! - starts[0]!;
    console.log(`    start: +${ms(growth)} from the first point to the last`);
    curves.push({
      title: 'runtime start (ms) by old task records',
      xs: RECORDS,
      ys: starts,
    });
  }

  if (PARTS.has('d')) {
    const listBytes: number[] = [];
    const listTimes: number[] = [];
    const fullReads: number[] = [];
    console.log('(d) task_list with N live tasks');
    // Warmed up first: the first point would otherwise pay for compiling the tool's path.
    await taskListPoint(LIVE_TASKS[0]!);
    for (const count of LIVE_TASKS) {
      const point = await taskListPoint(count);
      listBytes.push(point.bytes);
      listTimes.push(point.ms);
      fullReads.push(point.fullReadMs);
      console.log(
        `    ${String(count).padStart(6)} tasks: ${point.bytes} bytes in ${ms(point.ms)} (a full read and selection, as before: ${ms(point.fullReadMs)})`,
      );
    }
    console.log(ratioLine('task_list time', listTimes, 2));
    console.log(ratioLine('a full read (the reference)', fullReads));
    curves.push({
      title: 'task_list answer (KB) by live tasks',
      xs: LIVE_TASKS,
      ys: listBytes.map((b) => b / 1024),
    });
  }

  if (PARTS.has('e')) {
    console.log('(e) a background `true` through the runtime after N ended tasks of its session (cap 1000)');
    const history = await historyCurve(ENDED_TASKS);
    ENDED_TASKS.forEach((count, index) => {
      console.log(`    ${String(count).padStart(6)} ended: ${ms(history.perTask[index]!)} per task`);
    });
    console.log(ratioLine('per task', history.perTask));
    console.log(`    disposing the runtime after them: ${ms(history.disposeMs)}`);
    curves.push({ title: 'background true (ms) by ended tasks', xs: ENDED_TASKS, ys: history.perTask });
  }

  if (PARTS.has('f')) {
    const browserPath = findBrowser();
    console.log(`(f) the dashboard's first paint with N sessions x ${TASKS_PER_SESSION} task records each`);
    if (browserPath === undefined) {
      console.log('    skipped: no Chromium-based browser (apt-get install chromium, or set ERRAND_BROWSER)');
    } else {
      const profile = mkdtempSync(join(tmpdir(), 'errand-bench-browser-'));
      directories.push(profile);
      const browser = await chromium.launchPersistentContext(profile, {
        executablePath: browserPath,
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
      });
      try {
        const paints: number[] = [];
        for (const count of SESSIONS) {
          const paint = await firstPaintPoint(browser, count, TASKS_PER_SESSION);
          paints.push(paint);
          console.log(`    ${String(count).padStart(6)} sessions: first paint ${ms(paint)}`);
        }
        console.log(ratioLine('first paint', paints));
        curves.push({ title: 'dashboard first paint (ms) by sessions', xs: SESSIONS, ys: paints });
      } finally {
        await browser.close();
      }
    }
  }

  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(curves));
  if (process.env.BENCH_SVG) {
    const before = process.env.BENCH_BEFORE
      ? (JSON.parse(readFileSync(process.env.BENCH_BEFORE, 'utf8')) as Curve[])
      : [];
    writeFileSync(process.env.BENCH_SVG, renderChart(curves, before));
    console.log(`chart written to ${process.env.BENCH_SVG}`);
  }
}

try {
  await main();
} finally {
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
}
