/**
 * Errand on the hosts of a lab (`netns-hosts.ts`): `errand worker` processes (the built CLI) and a
 * runtime (`test/fixtures/host/lab-runtime.mjs`, a library host on its own SQLite data directory)
 * started on hosts of their own, and the books a suite keeps of a run: each command is marked with a
 * key, appends the key to its host's own `/tmp/ran.log` when it starts, and prints `STAMP <ns>` just
 * before it exits with the code the key determines. `account()` reads every worker's ledger and the
 * runtime's endings and notifications and counts what each ending must be: told exactly once, no
 * command run twice, the status true (a completed task's exit code is its command's, it ran on the
 * worker its detail names; a lost one never ended and ran at most once).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type HostProcess, type LabHost, REPO_ROOT } from './netns-hosts.js';

const cli = join(REPO_ROOT, 'dist', 'cli', 'main.js');
const runtimeFixture = join(REPO_ROOT, 'test', 'fixtures', 'host', 'lab-runtime.mjs');

export interface LabWorkerOptions {
  readonly url: string;
  readonly prefix: string;
  readonly name: string;
  readonly heartbeatMs: number;
  readonly heartbeatTtlMs: number;
  readonly concurrency?: number;
}

/** `errand worker` on `host` (its data directory in the host's own HOME); resolves once it takes jobs. */
export async function startLabWorker(host: LabHost, options: LabWorkerOptions): Promise<HostProcess> {
  const worker = host.spawn(process.execPath, [
    cli,
    'worker',
    '--redis',
    options.url,
    '--redis-prefix',
    options.prefix,
    '--name',
    options.name,
    '--concurrency',
    String(options.concurrency ?? 8),
    '--heartbeat',
    String(options.heartbeatMs),
    '--heartbeat-ttl',
    String(options.heartbeatTtlMs),
  ]);
  await worker.waitFor(/takes jobs/, 60_000);
  return worker;
}

export interface DoneEvent {
  readonly taskId: string;
  readonly status: string;
  readonly exitCode: number | null;
  readonly error: string | null;
  readonly worker: string | null;
  readonly at: number;
}

export interface ToldEvent {
  readonly taskId: string;
  readonly at: number;
  readonly stamp: number | null;
  readonly output: string;
}

export interface LabRuntime {
  readonly process: HostProcess;
  /** Every end event per task id, in order. */
  readonly ends: Map<string, DoneEvent[]>;
  /** Every notification queued per task id. */
  readonly told: Map<string, ToldEvent[]>;
  /** The key → task id of every command started. */
  readonly tasks: Map<string, string>;
  /** Starts `command` under `key`; resolves with its task id. */
  start(key: string, command: string): Promise<string>;
  /** Resolves once `check()` holds (checked on every event and every 100 ms), rejects after `timeoutMs`. */
  until(check: () => boolean, timeoutMs: number, what: string): Promise<void>;
  close(): Promise<void>;
}

export async function startLabRuntime(
  host: LabHost,
  config: {
    readonly url: string;
    readonly prefix: string;
    readonly heartbeatMs: number;
    readonly heartbeatTtlMs: number;
    readonly maxTasks?: number;
  },
): Promise<LabRuntime> {
  const child = host.spawn(
    process.execPath,
    [runtimeFixture, JSON.stringify({ maxTasks: 5000, ...config })],
    {
      stdin: true,
    },
  );
  const ends = new Map<string, DoneEvent[]>();
  const told = new Map<string, ToldEvent[]>();
  const tasks = new Map<string, string>();
  const starting = new Map<string, { resolve: (id: string) => void; reject: (error: Error) => void }>();
  const waiters = new Set<() => void>();
  let buffered = '';
  let ready: () => void;
  const isReady = new Promise<void>((resolve) => {
    ready = resolve;
  });
  child.child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
      if (!line.startsWith('{')) continue;
      const event = JSON.parse(line) as Record<string, unknown> & { ev: string };
      if (event.ev === 'ready') ready();
      else if (event.ev === 'started') {
        tasks.set(event.key as string, event.taskId as string);
        starting.get(event.key as string)?.resolve(event.taskId as string);
      } else if (event.ev === 'start-failed') {
        starting.get(event.key as string)?.reject(new Error(String(event.error)));
      } else if (event.ev === 'done') {
        const done = event as unknown as DoneEvent;
        ends.set(done.taskId, [...(ends.get(done.taskId) ?? []), done]);
      } else if (event.ev === 'told') {
        const notice = event as unknown as ToldEvent;
        told.set(notice.taskId, [...(told.get(notice.taskId) ?? []), notice]);
      }
      for (const waiter of waiters) waiter();
    }
  });
  await Promise.race([
    isReady,
    child.exited.then(() => {
      throw new Error(`the runtime on ${host.name} exited early: ${child.output()}`);
    }),
  ]);
  return {
    process: child,
    ends,
    told,
    tasks,
    start(key, command) {
      return new Promise((resolve, reject) => {
        starting.set(key, { resolve, reject });
        child.child.stdin!.write(`${JSON.stringify({ op: 'start', key, command })}\n`);
      });
    },
    until(check, timeoutMs, what) {
      return new Promise((resolve, reject) => {
        const attempt = () => {
          if (!check()) return;
          finish();
          resolve();
        };
        const interval = setInterval(attempt, 100);
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`not within ${timeoutMs} ms: ${what}\n${child.output().slice(-2000)}`));
        }, timeoutMs);
        const finish = () => {
          clearInterval(interval);
          clearTimeout(timer);
          waiters.delete(attempt);
        };
        waiters.add(attempt);
        attempt();
      });
    },
    async close() {
      if (child.child.exitCode !== null || child.child.signalCode !== null) return;
      child.child.stdin!.write(`${JSON.stringify({ op: 'close' })}\n`);
      const timer = setTimeout(() => child.child.kill('SIGKILL'), 15_000);
      await child.exited;
      clearTimeout(timer);
    },
  };
}

/** The exit code the command of `key` ends with (0 to 3, from its digits). */
export function exitCodeOf(key: string): number {
  return Number(key.replace(/\D/g, '') || 0) % 4;
}

/**
 * A command under `key`: records its start in its host's ledger, runs `seconds`, prints its stamp and
 * exits with `exitCodeOf(key)`.
 */
export function ledgerCommand(key: string, seconds: number): string {
  return `echo ${key} >> /tmp/ran.log; sleep ${seconds}; echo ran ${key}; echo STAMP $(date +%s%N); exit ${exitCodeOf(key)}`;
}

export interface Accounting {
  readonly started: number;
  readonly ended: number;
  /** Ran to their end: completed (exit 0) or failed with their command's exit code. */
  readonly completed: number;
  readonly lost: number;
  /** Tasks with more than one end event. */
  readonly duplicatedEnds: number;
  /** Tasks told zero times once ended, and told more than once. */
  readonly untold: number;
  readonly duplicatedTells: number;
  /** Keys found more than once across every worker's ledger. */
  readonly ranTwice: number;
  /** Ends whose status is not what happened (see the module comment), with why. */
  readonly untrue: readonly string[];
  /** How many commands each worker host ran. */
  readonly ranOn: Readonly<Record<string, number>>;
  /** How many tasks were settled lost on each worker. */
  readonly lostOn: Readonly<Record<string, number>>;
  /** Why tasks were lost: each distinct error (its task ids and numbers left out), with how many. */
  readonly lostWhy: Readonly<Record<string, number>>;
}

/** Counts a run's books (see the module comment). `workers` maps worker names to their hosts. */
export function account(runtime: LabRuntime, workers: ReadonlyMap<string, LabHost>): Accounting {
  const ranBy = new Map<string, string[]>();
  const ranOn: Record<string, number> = {};
  for (const [name, host] of workers) {
    let ledger = '';
    try {
      ledger = readFileSync(join(host.tmp, 'ran.log'), 'utf8');
    } catch {
      // This worker ran nothing.
    }
    const keys = ledger.split('\n').filter((line) => line !== '');
    ranOn[name] = keys.length;
    for (const key of keys) ranBy.set(key, [...(ranBy.get(key) ?? []), name]);
  }
  let ended = 0;
  let completed = 0;
  let lost = 0;
  let duplicatedEnds = 0;
  let untold = 0;
  let duplicatedTells = 0;
  const untrue: string[] = [];
  const lostOn: Record<string, number> = {};
  const lostWhy: Record<string, number> = {};
  for (const [key, taskId] of runtime.tasks) {
    const ends = runtime.ends.get(taskId) ?? [];
    const tells = runtime.told.get(taskId) ?? [];
    const ran = ranBy.get(key) ?? [];
    if (ends.length > 1) duplicatedEnds += 1;
    if (tells.length > 1) duplicatedTells += 1;
    const end = ends[0];
    if (!end) continue;
    ended += 1;
    if (tells.length === 0) untold += 1;
    if (end.status === 'completed' || (end.status === 'failed' && end.exitCode !== null)) {
      completed += 1;
      if (end.exitCode !== exitCodeOf(key))
        untrue.push(`${key} (${taskId}): exit ${end.exitCode}, its command exits ${exitCodeOf(key)}`);
      if (ran.length !== 1 || ran[0] !== end.worker)
        untrue.push(`${key} (${taskId}): completed on ${end.worker}, ran on [${ran.join(', ')}]`);
      const tell = tells[0];
      if (tell && !tell.output.includes(`ran ${key}`))
        untrue.push(`${key} (${taskId}): its output lacks its end`);
    } else if (end.status === 'lost') {
      lost += 1;
      lostOn[end.worker ?? '?'] = (lostOn[end.worker ?? '?'] ?? 0) + 1;
      const why = (end.error ?? '').replace(/\([^)]*\)/g, '').replace(/\d+/g, 'N');
      lostWhy[why] = (lostWhy[why] ?? 0) + 1;
      if (ran.length > 1) untrue.push(`${key} (${taskId}): lost, ran on [${ran.join(', ')}]`);
      if (ran.length === 1 && end.worker !== ran[0])
        untrue.push(`${key} (${taskId}): lost on ${end.worker}, ran on ${ran[0]}`);
    } else {
      untrue.push(`${key} (${taskId}): ${end.status} (${end.error})`);
    }
  }
  const ranTwice = [...ranBy.values()].filter((hosts) => hosts.length > 1).length;
  return {
    started: runtime.tasks.size,
    ended,
    completed,
    lost,
    duplicatedEnds,
    untold,
    duplicatedTells,
    ranTwice,
    untrue,
    ranOn,
    lostOn,
    lostWhy,
  };
}

/** One line for a run's books: what the suites and the benchmark print. */
export function describeAccounting(books: Accounting): string {
  const ran = Object.entries(books.ranOn)
    .map(([name, count]) => `${name} ${count}`)
    .join(', ');
  const why = Object.entries(books.lostWhy)
    .map(([reason, count]) => `${count}x "${reason}"`)
    .join(', ');
  return `${books.started} started, ${books.ended} ended (${books.completed} ran to their exit, ${books.lost} lost${why ? `: ${why}` : ''}); told twice ${books.duplicatedTells}, untold ${books.untold}, ended twice ${books.duplicatedEnds}, run twice ${books.ranTwice}, untrue ${books.untrue.length}; ran on: ${ran}`;
}
