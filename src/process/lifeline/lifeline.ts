/**
 * The runtime's side of the lifeline: starts the sidecar (`lifeline-sidecar.ts`) once, eagerly, in a
 * process group and session of its own, and tells it — asynchronously, in one write per turn of the event
 * loop, never on the spawn or ending path — about each non-durable process tree as it starts and stops.
 * Every process those trees start carries the lifeline's environment tag (`tag`), so the sidecar finds
 * even the trees it was never told about. If the sidecar dies while the runtime lives, it is started
 * again and told every tree again. `release()` is the clean exit: the sidecar stands down and stops nothing.
 *
 * Nothing waits for the sidecar: it spawns nothing, and what it is told goes in writes nobody awaits. While
 * it watches trees it is asked to answer a `ping` within `answerTimeoutMs`; one that does not (stopped,
 * wedged) is killed and another is started, so a stopped sidecar leaves a runtime unwatched for at most
 * that bound plus one ping interval. It does not keep the runtime's event loop alive.
 */
import { type ChildProcess, spawn as nodeSpawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CancelTimer, Clock } from '../../tasks/clock.js';
import type { Logger } from '../../tasks/logger.js';
import type { Spawner } from '../launch/process-launcher.js';
import { formatEnvironmentTag } from '../trees/process-identity.js';
import type { EnvironmentTag } from '../trees/process-tree.js';
import { decodeMessage, encodeMessage, type WatchMessage } from './lifeline-protocol.js';

/** The environment variable every process of a runtime's non-durable trees carries. */
export const LIFELINE_TAG_VARIABLE = 'ERRAND_LIFELINE';

/** A tree the lifeline is told about. */
export interface LifelineTree {
  /** The tree's root (its group and session id). */
  readonly pid: number;
  /** The root's start time (exact, or a lower bound), in clock ticks after boot. */
  readonly startTime: number;
  /** The tree's own environment tag, when it has one. */
  readonly tag?: EnvironmentTag | undefined;
  /** Where the sidecar records that it stopped the tree, when the tree has such a file. */
  readonly statusFile?: string | undefined;
}

/** What a producer needs of a lifeline: its tag for the environment, and telling it about trees. */
export interface LifelineLink {
  /** Put into the environment of every process of a non-durable tree. */
  readonly tag: EnvironmentTag;
  /** Tells the sidecar about a tree; returns a function that tells it the tree is gone. */
  watch(tree: LifelineTree): () => void;
}

/** Whether `value` is a `LifelineLink` (options check it by this). */
export function isLifelineLink(value: unknown): boolean {
  const link = value as Partial<LifelineLink> | null;
  return (
    typeof link === 'object' &&
    link !== null &&
    typeof link.watch === 'function' &&
    typeof link.tag?.name === 'string'
  );
}

export interface LifelineOptions {
  /** How long the sidecar waits between SIGTERM and SIGKILL when its runtime died. Default 500 ms. */
  readonly killGraceMs?: number;
  /** Restarts of a sidecar that died, per minute, before the runtime gives up on it. Default 5. */
  readonly maxRestartsPerMinute?: number;
  /** The Node executable that runs the sidecar. Default `process.execPath`. */
  readonly nodePath?: string;
  /** The sidecar script. Default: `lifeline-sidecar.js` of this build. */
  readonly sidecarScript?: string;
  /** Starts the sidecar; injectable for tests. Default `child_process.spawn`. */
  readonly spawn?: Spawner;
  /**
   * How long the sidecar may take to answer a `ping` while it watches trees before it is taken for dead,
   * killed and started again. Default 5000 ms; it is asked every `answerTimeoutMs / 5`.
   */
  readonly answerTimeoutMs?: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

export const LIFELINE_DEFAULTS = Object.freeze({
  killGraceMs: 500,
  maxRestartsPerMinute: 5,
  answerTimeoutMs: 5000,
});

/**
 * How long a `watch` may wait for the next write. The runtime's tag in the command's environment already
 * lets the sidecar find and stop the tree should the runtime die first; the watch adds the tree's own
 * tag and its status file. Waiting a little lets a burst of starts wake the sidecar once, not once per
 * start: on two loaded cores a woken sidecar preempts the runtime in the middle of its starts.
 */
const WATCH_FLUSH_MS = 10;

/**
 * How long an `unwatch` may wait for the next write. A tree that ended needs no prompt word (the sidecar
 * checks a pid's start time before it signals anything), and telling it at the ending would wake the
 * sidecar on the ending's own path: it goes with the next watch or ping, or alone after this long.
 */
const UNWATCH_FLUSH_MS = 50;

/** How long a released sidecar may take to exit before it is killed (it stops nothing then). */
const RELEASE_TIMEOUT_MS = 2000;

/** The sidecar script of this build. The sources run as TypeScript under a test runner: use the build then. */
export function defaultSidecarScript(): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = join(dirname(here), 'lifeline-sidecar.js');
  if (existsSync(sibling)) return sibling;
  return join(dirname(here), '..', '..', '..', 'dist', 'process', 'lifeline', 'lifeline-sidecar.js');
}

function watchMessage(key: string, tree: LifelineTree): WatchMessage {
  return {
    type: 'watch',
    key,
    pid: tree.pid,
    startTime: tree.startTime,
    ...(tree.tag === undefined ? {} : { tag: formatEnvironmentTag(tree.tag) }),
    ...(tree.statusFile === undefined ? {} : { statusFile: tree.statusFile }),
  };
}

export class Lifeline implements LifelineLink {
  readonly tag: EnvironmentTag;
  readonly #options: LifelineOptions;
  readonly #trees = new Map<string, WatchMessage>();
  #child: ChildProcess | undefined;
  #queue: string[] = [];
  #flushScheduled = false;
  /** The timer that writes queued watches and unwatches when nothing more urgent wrote them first. */
  #cancelLazyFlush: CancelTimer | undefined;
  /** When that timer is due (clock milliseconds). */
  #lazyFlushAt = Number.POSITIVE_INFINITY;
  #sequence = 0;
  #restarts: number[] = [];
  #released: Promise<void> | undefined;
  #gaveUp = false;
  /** The ping the running sidecar has not answered yet. */
  #unanswered: { readonly seq: number; readonly sentAt: number; readonly child: ChildProcess } | undefined;
  #pingSequence = 0;
  #cancelHeartbeat: CancelTimer | undefined;
  #resolveReady!: (ready: boolean) => void;
  /** Resolves with true once the first sidecar said it runs, false if it never did. */
  readonly ready: Promise<boolean>;

  constructor(options: LifelineOptions) {
    this.#options = options;
    this.tag = { name: LIFELINE_TAG_VARIABLE, value: randomUUID() };
    this.ready = new Promise((resolve) => {
      this.#resolveReady = resolve;
    });
    this.#start();
  }

  /** The sidecar's pid, while one runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Whether `release()` was called (the sidecar stands down and stops nothing). */
  get released(): boolean {
    return this.#released !== undefined;
  }

  watch(tree: LifelineTree): () => void {
    const key = `t${++this.#sequence}`;
    const message = watchMessage(key, tree);
    this.#trees.set(key, message);
    this.#send(encodeMessage(message), WATCH_FLUSH_MS);
    this.#armHeartbeat();
    return this.#unwatch(key);
  }

  #unwatch(key: string): () => void {
    return () => {
      if (!this.#trees.delete(key)) return;
      this.#send(encodeMessage({ type: 'unwatch', key }), UNWATCH_FLUSH_MS);
      if (this.#trees.size === 0) {
        this.#cancelHeartbeat?.();
        this.#cancelHeartbeat = undefined;
      }
    };
  }

  /** The clean exit: the sidecar stops nothing and exits; resolves once it did. Idempotent. */
  release(): Promise<void> {
    this.#released ??= new Promise<void>((resolve) => {
      this.#trees.clear();
      this.#cancelHeartbeat?.();
      this.#cancelHeartbeat = undefined;
      this.#cancelLazyFlush?.();
      this.#cancelLazyFlush = undefined;
      this.#lazyFlushAt = Number.POSITIVE_INFINITY;
      const child = this.#child;
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
        resolve();
        return;
      }
      const kill: CancelTimer = this.#options.clock.schedule(RELEASE_TIMEOUT_MS, () => child.kill('SIGKILL'));
      child.once('exit', () => {
        kill();
        resolve();
      });
      this.#queue = [];
      child.stdin?.end(encodeMessage({ type: 'release' }));
    });
    return this.#released;
  }

  #start(): void {
    const options = this.#options;
    const spawn = options.spawn ?? (nodeSpawn as Spawner);
    // The sidecar carries no lifeline tag: an outer runtime's lifeline must not stop it before it did its job.
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(process.env)) {
      if (value !== undefined && name !== LIFELINE_TAG_VARIABLE) env[name] = value;
    }
    let child: ChildProcess;
    try {
      child = spawn(
        options.nodePath ?? process.execPath,
        [
          options.sidecarScript ?? defaultSidecarScript(),
          '--runtime-tag',
          formatEnvironmentTag(this.tag),
          '--kill-grace-ms',
          String(options.killGraceMs ?? LIFELINE_DEFAULTS.killGraceMs),
        ],
        { detached: true, stdio: ['pipe', 'pipe', 'ignore'], env },
      );
    } catch (error) {
      this.#failed(error);
      return;
    }
    this.#child = child;
    this.#unanswered = undefined;
    child.unref();
    (child.stdin as Socket | null)?.unref?.();
    (child.stdout as Socket | null)?.unref?.();
    child.stdin?.on('error', () => {
      // The sidecar went away; 'exit' restarts it.
    });
    child.on('error', (error) => this.#failed(error));
    let pending = '';
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      pending += chunk;
      for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
        const message = decodeMessage(pending.slice(0, end));
        pending = pending.slice(end + 1);
        if (message?.type === 'ready') this.#resolveReady(true);
        else if (message?.type === 'pong') {
          if (this.#unanswered?.child === child && this.#unanswered.seq === message.seq)
            this.#unanswered = undefined;
        } else if (message?.type === 'error') {
          options.logger.warn('the lifeline sidecar refused a message', {
            of: message.of,
            message: message.message,
          });
        }
      }
    });
    child.once('exit', (code, signal) => this.#exited(child, code, signal));
    // A restarted sidecar is told every tree that still runs; what was queued for the old one is moot.
    this.#queue = [...this.#trees.values()].map((message) => encodeMessage(message));
    this.#scheduleFlush();
  }

  /** While trees are watched, the sidecar is asked every so often whether it still reads (see `#beat`). */
  #armHeartbeat(): void {
    if (this.#cancelHeartbeat !== undefined || this.#trees.size === 0) return;
    if (this.#released !== undefined || this.#gaveUp) return;
    const answerMs = this.#options.answerTimeoutMs ?? LIFELINE_DEFAULTS.answerTimeoutMs;
    this.#cancelHeartbeat = this.#options.clock.schedule(Math.max(1, Math.floor(answerMs / 5)), () => {
      this.#cancelHeartbeat = undefined;
      this.#beat(answerMs);
      this.#armHeartbeat();
    });
  }

  /**
   * Asks the sidecar for a `pong`, or — when the last ping went unanswered for `answerMs` — takes it for
   * dead: it is killed (a stopped process dies of SIGKILL too) and `#exited` starts another, told every tree.
   */
  #beat(answerMs: number): void {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const now = this.#options.clock.now();
    const unanswered = this.#unanswered;
    if (unanswered !== undefined && unanswered.child === child) {
      if (now - unanswered.sentAt < answerMs) return;
      this.#unanswered = undefined;
      this.#options.logger.warn('the lifeline sidecar did not answer; killing it and starting another', {
        pid: child.pid,
        answerTimeoutMs: answerMs,
      });
      child.kill('SIGKILL');
      return;
    }
    const seq = ++this.#pingSequence;
    this.#unanswered = { seq, sentAt: now, child };
    this.#send(encodeMessage({ type: 'ping', seq }));
  }

  #exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#child === child) this.#child = undefined;
    if (this.#released !== undefined) return;
    const now = this.#options.clock.now();
    this.#restarts = this.#restarts.filter((at) => now - at < 60_000);
    const limit = this.#options.maxRestartsPerMinute ?? LIFELINE_DEFAULTS.maxRestartsPerMinute;
    if (this.#restarts.length >= limit) {
      if (!this.#gaveUp) {
        this.#gaveUp = true;
        this.#resolveReady(false);
        this.#options.logger.warn(
          'the lifeline sidecar keeps dying; background processes may outlive this runtime if it is killed',
          { code, signal, restarts: this.#restarts.length },
        );
      }
      return;
    }
    this.#restarts.push(now);
    this.#options.logger.warn('the lifeline sidecar exited; starting it again', { code, signal });
    this.#start();
  }

  #failed(error: unknown): void {
    this.#resolveReady(false);
    this.#options.logger.warn('the lifeline sidecar could not be started', {
      error: error instanceof Error ? error.message : String(error),
    });
  }

  /**
   * Queues `line`: written after this turn of the event loop, or — given `withinMs` — with the next write,
   * at the latest `withinMs` from now.
   */
  #send(line: string, withinMs?: number): void {
    if (this.#released !== undefined) return;
    this.#queue.push(line);
    if (withinMs === undefined) {
      this.#scheduleFlush();
      return;
    }
    const due = this.#options.clock.now() + withinMs;
    if (due >= this.#lazyFlushAt) return;
    this.#cancelLazyFlush?.();
    this.#lazyFlushAt = due;
    this.#cancelLazyFlush = this.#options.clock.schedule(withinMs, () => {
      this.#cancelLazyFlush = undefined;
      this.#lazyFlushAt = Number.POSITIVE_INFINITY;
      this.#scheduleFlush();
    });
  }

  /**
   * One write per turn of the event loop (after what the turn does), never inside a spawn or an ending
   * itself: the trees a turn starts and stops go in one write, and the sidecar is woken once, after the
   * launches and endings of the turn went their way. The environment tag covers a runtime killed before.
   */
  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      this.#cancelLazyFlush?.();
      this.#cancelLazyFlush = undefined;
      this.#lazyFlushAt = Number.POSITIVE_INFINITY;
      const child = this.#child;
      if (child?.stdin === null || child?.stdin === undefined || this.#queue.length === 0) return;
      if (child.stdin.destroyed || child.stdin.writableEnded) return;
      const text = this.#queue.join('');
      this.#queue = [];
      child.stdin.write(text);
    });
  }
}
