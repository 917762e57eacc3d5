/**
 * The lifeline sidecar as the spawner: a `ProcessLauncher` that asks the sidecar (over its Node IPC
 * channel) to start each request, so the fork happens in a small process and costs the same whatever
 * this process's heap (a fork copies the forking process's page tables on its event loop). The command
 * is started exactly as `createSpawnLauncher` would start it — own session and group, the tag in the
 * environment, stdin on /dev/null — and its stdout and stderr pipes come back as handles: this process
 * reads them directly, the sidecar never touches the bytes, and a paused reader stops the command's
 * writes as with a direct spawn. `exit` is emitted once the process exited: when both its pipes ended and
 * the table shows it a zombie the sidecar has not reaped yet (its wait status is there), else when the
 * sidecar says it reaped it.
 *
 * Until the sidecar said `ready` (a runtime's first moments), launches are direct spawns: no start waits
 * for the sidecar to boot. If the sidecar dies, every later launch is a direct spawn (said once in the
 * log), and what was in flight still ends. A launch not yet answered is looked at once the processes the
 * sidecar forked just before it died had time to start their commands (`unansweredSettleMs`: until its
 * exec a forked process carries the sidecar's environment, and for a moment during it none): it is started
 * directly unless a process carrying its tag exists (then it fails: it started, and running it twice is
 * worse than reporting it). A running process is watched in the process table until it is gone, and then
 * exits with an unknown status (code and signal null: nobody is left who reaped it).
 */
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { pid as runtimePid } from 'node:process';
import { Readable } from 'node:stream';
import type { CancelTimer, Clock } from '../tasks/clock.js';
import type { Logger } from '../tasks/logger.js';
import type { LifelineTree } from './lifeline.js';
import type { ExitedMessage, SpawnFailedMessage, SpawnMessage } from './lifeline-protocol.js';
import { formatEnvironmentTag } from './process-identity.js';
import {
  createSpawnLauncher,
  type LaunchedProcess,
  type LaunchRequest,
  launchEnvironment,
  type ProcessLauncher,
} from './process-launcher.js';
import { exitOfStatus, isDead, type ProcessSource, procfsSource } from './process-table.js';
import {
  closeSharedReadEnds,
  createSharedReadEnds,
  readEndStream,
  type SharedReadEnds,
} from './stdio-pipes.js';

/** What the launcher needs of the lifeline: its sidecar process while one runs. */
export interface SpawnerSidecar {
  readonly sidecar: ChildProcess | undefined;
  /** True once the lifeline stood down: its sidecar exiting then is no failure. */
  readonly released: boolean;
  /** A key for a tree the sidecar watches from its spawn (see `Lifeline.watchKey`). */
  watchKey?(): string;
  /** Records that tree once its pid is known (see `Lifeline.adopt`); returns its unwatch. */
  adopt?(key: string, tree: LifelineTree, sidecar: ChildProcess): () => void;
}

export interface SidecarLauncherOptions {
  readonly lifeline: SpawnerSidecar;
  /** Launches once the sidecar is gone. Default `createSpawnLauncher()`. */
  readonly fallback?: ProcessLauncher;
  /** Where a process the dead sidecar started is looked for. Default the /proc table. */
  readonly processSource?: ProcessSource;
  /** How often such an orphan is looked for until it is gone, in ms. Default 50. */
  readonly orphanPollMs?: number;
  /**
   * Once the sidecar died, how long launches it had not answered wait before their tags are looked for
   * in the process table, in ms. Default 100.
   */
  readonly unansweredSettleMs?: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

export const SIDECAR_LAUNCHER_DEFAULTS = Object.freeze({ orphanPollMs: 50, unansweredSettleMs: 100 });

/**
 * After both pipes of a process ended, how long to wait before each further look at the table for its
 * zombie (ms): its files close a moment before it turns zombie.
 */
const ZOMBIE_RECHECK_MS: readonly number[] = [0, 1, 4, 16];

/** One stream of a command: readable at once, fed by the pipe's handle when the sidecar sends it. */
class PipeStream extends Readable {
  #socket: Socket | undefined;
  #wanted = false;
  readonly #onEnd: () => void;
  /** True once the pipe's write end was closed by every process that held it. */
  atEnd = false;

  /** `onEnd` runs when the pipe reached end of file. */
  constructor(onEnd: () => void) {
    super();
    this.#onEnd = onEnd;
  }

  attach(socket: Socket): void {
    if (this.destroyed) {
      socket.destroy();
      return;
    }
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) {
        this.#wanted = false;
        socket.pause();
      }
    });
    socket.once('end', () => {
      this.atEnd = true;
      this.push(null);
      this.#onEnd();
    });
    socket.on('error', () => {
      // A received pipe is a read end: shutting down its write side on end of file may fail; nothing is lost.
    });
    socket.once('close', () => {
      if (!this.readableEnded) this.push(null);
    });
    if (!this.#wanted) socket.pause();
  }

  /** The pipe never came (the sidecar died first): the stream ends empty. */
  lost(): void {
    if (this.#socket === undefined && !this.destroyed) this.push(null);
  }

  override _read(): void {
    this.#wanted = true;
    this.#socket?.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#socket?.destroy();
    callback(error);
  }
}

/** A process the sidecar is asked to start, as the producers see it. */
class SidecarProcess extends EventEmitter implements LaunchedProcess {
  pid: number | undefined;
  unwatch: (() => void) | undefined = undefined;
  /** The key the sidecar watches the tree under from its spawn, when it does. */
  watchKey: string | undefined = undefined;
  readonly stdout = new PipeStream(() => this.#pipeEnded());
  readonly stderr = new PipeStream(() => this.#pipeEnded());
  exited = false;
  /** Set false by an exit heard from the table before the sidecar reaped the process. */
  reaped: boolean | undefined = undefined;
  #cancelPoll: CancelTimer | undefined;
  #cancelRecheck: CancelTimer | undefined;
  /** The pipes made here for the command, until the sidecar said whether it used them. */
  #shared: SharedReadEnds | undefined;

  constructor(
    readonly request: LaunchRequest,
    readonly id: number,
    shared: SharedReadEnds | undefined,
    /** Where the exit is looked for once both pipes ended, and the sidecar's pid (the command's parent). */
    readonly table: {
      readonly source: ProcessSource;
      readonly parent: number | undefined;
      readonly clock: Clock;
    },
  ) {
    super();
    this.#shared = shared;
  }

  /**
   * The sidecar's word on the pipes made here: used (`shared`), they are the command's streams from now
   * on; not used, or no word (the launch failed, the sidecar died first), their read ends are closed.
   */
  settlePipes(used: boolean): void {
    const shared = this.#shared;
    if (shared === undefined) return;
    this.#shared = undefined;
    if (!used) {
      closeSharedReadEnds(shared);
      return;
    }
    this.stdout.attach(readEndStream(shared.stdout.fd));
    this.stderr.attach(readEndStream(shared.stderr.fd));
  }

  /**
   * Both pipes ended: the shell most likely exited, and the sidecar has yet to hear of it, reap it and say
   * so (a wake of each process in turn). A zombie child of the sidecar at the pid has its wait status in
   * the table: that is its exit, known now. Anything else (it runs on with its pipes closed, or it was
   * reaped already) waits for the sidecar's message.
   */
  #pipeEnded(attempt = 0): void {
    this.#cancelRecheck?.();
    this.#cancelRecheck = undefined;
    if (this.exited || this.pid === undefined || !this.stdout.atEnd || !this.stderr.atEnd) return;
    const { source, parent, clock } = this.table;
    if (parent === undefined) return;
    const entry = source.read(this.pid);
    // Gone from the table: the sidecar reaped it, and its message is on its way.
    if (entry === undefined || entry.ppid !== parent) return;
    if (entry.state === 'Z' && entry.exitStatus !== undefined) {
      const { code, signal } = exitOfStatus(entry.exitStatus);
      this.reaped = false;
      this.exit(code, signal);
      return;
    }
    // An exiting process closes its files before it turns zombie: looked at again a few times, briefly
    // (one that runs on with its pipes closed is left to the sidecar's message).
    const delay = ZOMBIE_RECHECK_MS[attempt];
    if (delay !== undefined) this.#cancelRecheck = clock.schedule(delay, () => this.#pipeEnded(attempt + 1));
  }

  spawned(pid: number): void {
    this.pid = pid;
    this.emit('spawn');
    // Both pipes may have ended before the pid was known.
    this.#pipeEnded();
  }

  failed(error: Error): void {
    this.settlePipes(false);
    this.stdout.lost();
    this.stderr.lost();
    this.emit('error', error);
  }

  /** The process is gone: the sidecar reaped it, or nobody is left to (see `orphaned`). */
  gone(): void {
    if (this.reaped === false) this.reaped = true;
  }

  exit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited) return;
    this.exited = true;
    this.#cancelPoll?.();
    this.#cancelRecheck?.();
    this.emit('exit', code, signal);
  }

  /** The sidecar died while this ran: exits (status unknown) once its pid names no live process. */
  orphaned(source: ProcessSource, clock: Clock, pollMs: number, startedAfter: number): void {
    this.stdout.lost();
    this.stderr.lost();
    const check = () => {
      const pid = this.pid!;
      const entry = source.read(pid);
      if (entry === undefined || isDead(entry) || entry.startTime < startedAfter) {
        this.gone();
        this.exit(null, null);
      } else this.#cancelPoll = clock.schedule(pollMs, check);
    };
    check();
  }
}

export class SidecarLauncher implements ProcessLauncher {
  readonly #options: SidecarLauncherOptions;
  readonly #fallback: ProcessLauncher;
  readonly #source: ProcessSource;
  readonly #pending = new Map<number, SidecarProcess>();
  #channel: ChildProcess | undefined;
  #fellBack = false;
  #sequence = 0;
  /** Clock ticks since boot when the channel was taken: every process it started started after it. */
  #channelSince = 0;

  constructor(options: SidecarLauncherOptions) {
    this.#options = options;
    this.#fallback = options.fallback ?? createSpawnLauncher();
    this.#source = options.processSource ?? procfsSource();
  }

  /** Whether launches go to the sidecar (false once it died, or while none runs). */
  get active(): boolean {
    return !this.#fellBack && (this.#channel ?? this.#options.lifeline.sidecar) !== undefined;
  }

  launch(request: LaunchRequest): LaunchedProcess {
    const channel = this.#link();
    if (channel === undefined) return this.#fallback.launch(request);
    // Throws what pipe(2) failed with, as a direct spawn would.
    const shared = createSharedReadEnds();
    const process = new SidecarProcess(request, ++this.#sequence, shared, {
      source: this.#source,
      parent: channel.pid,
      clock: this.#options.clock,
    });
    const lifeline = this.#options.lifeline;
    const watch = request.watch;
    // The sidecar watches the tree from its spawn on: no `watch` follows on the lifeline, and a runtime
    // killed between the spawn and its telling still has the tree stopped.
    if (watch !== undefined && lifeline.watchKey !== undefined && lifeline.adopt !== undefined) {
      process.watchKey = lifeline.watchKey();
    }
    const message: SpawnMessage = {
      type: 'spawn',
      id: process.id,
      file: request.file,
      args: request.args,
      cwd: request.cwd,
      env: launchEnvironment(request),
      ...(process.watchKey === undefined || watch === undefined
        ? {}
        : {
            watch: {
              key: process.watchKey,
              startTime: watch.startTime,
              ...(request.tag === undefined ? {} : { tag: formatEnvironmentTag(request.tag) }),
              ...(watch.statusFile === undefined ? {} : { statusFile: watch.statusFile }),
            },
          }),
      ...(shared === undefined ? {} : { stdio: { pid: runtimePid, ...shared } }),
    };
    this.#pending.set(process.id, process);
    if (this.#pending.size === 1) channel.channel?.ref();
    try {
      channel.send(message, (error: Error | null) => {
        if (error !== null) this.#sidecarGone(channel);
      });
    } catch {
      // The channel closed between the check and the send; the process is handled with the others.
      queueMicrotask(() => this.#sidecarGone(channel));
    }
    return process;
  }

  /** The sidecar's channel, listened to once; undefined once it died (or while none runs). */
  #link(): ChildProcess | undefined {
    if (this.#fellBack) return undefined;
    if (this.#channel !== undefined) return this.#channel;
    const channel = this.#options.lifeline.sidecar;
    if (channel === undefined) return undefined;
    this.#channel = channel;
    this.#channelSince = this.#source.clockTicks();
    channel.on('message', (message: unknown, handle: unknown) => this.#answer(message, handle));
    channel.once('exit', () => this.#sidecarGone(channel));
    channel.once('disconnect', () => this.#sidecarGone(channel));
    return channel;
  }

  #answer(message: unknown, handle: unknown): void {
    const answer = message as { type?: unknown; id?: unknown } | null;
    if (typeof answer?.id !== 'number') {
      if (answer?.type === 'error') {
        this.#options.logger.warn('the spawner sidecar refused a message', { answer });
      }
      return;
    }
    const process = this.#pending.get(answer.id);
    if (process === undefined) {
      (handle as Socket | undefined)?.destroy?.();
      return;
    }
    switch (answer.type) {
      case 'spawned': {
        const pid = (answer as { pid: number }).pid;
        const key = process.watchKey;
        const watch = process.request.watch;
        if (key !== undefined && watch !== undefined && this.#channel !== undefined) {
          process.unwatch = this.#options.lifeline.adopt?.(
            key,
            { pid, startTime: watch.startTime, tag: process.request.tag, statusFile: watch.statusFile },
            this.#channel,
          );
        }
        process.settlePipes((answer as { stdio?: unknown }).stdio === 'shared');
        process.spawned(pid);
        return;
      }
      case 'pipe': {
        const stream = (answer as { stream?: unknown }).stream === 'stderr' ? process.stderr : process.stdout;
        if (handle !== undefined) stream.attach(handle as Socket);
        else stream.lost();
        return;
      }
      case 'exited': {
        const { code, signal } = answer as ExitedMessage;
        this.#done(process);
        process.gone();
        process.exit(code, signal);
        return;
      }
      case 'spawn_failed':
        this.#done(process);
        process.failed(spawnError(answer as SpawnFailedMessage, process.request));
        return;
    }
  }

  #done(process: SidecarProcess): void {
    this.#pending.delete(process.id);
    if (this.#pending.size === 0) this.#channel?.channel?.unref();
  }

  /** The sidecar died: launches go direct from now on, and what it had in hand still ends. */
  #sidecarGone(channel: ChildProcess): void {
    if (this.#channel !== channel || this.#fellBack) return;
    this.#fellBack = true;
    // A process whose exit was heard from the table waits only for the sidecar's word on its reaping.
    let inFlight = 0;
    for (const process of this.#pending.values()) if (!process.exited) inFlight += 1;
    if (!this.#options.lifeline.released || inFlight > 0)
      this.#options.logger.warn(
        'the spawner sidecar is gone; this process spawns commands itself from now on',
        {
          inFlight,
        },
      );
    const { clock } = this.#options;
    const pollMs = this.#options.orphanPollMs ?? SIDECAR_LAUNCHER_DEFAULTS.orphanPollMs;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    const unanswered: SidecarProcess[] = [];
    for (const process of pending) {
      if (process.pid !== undefined) process.orphaned(this.#source, clock, pollMs, this.#channelSince);
      else {
        // A relaunch makes pipes of its own; one the sidecar started is not read (it fails below).
        process.settlePipes(false);
        unanswered.push(process);
      }
    }
    if (unanswered.length === 0) return;
    const settleMs = this.#options.unansweredSettleMs ?? SIDECAR_LAUNCHER_DEFAULTS.unansweredSettleMs;
    clock.schedule(settleMs, () => {
      const started = this.#startedTags(unanswered);
      for (const process of unanswered) {
        const tag = process.request.tag;
        if (tag !== undefined && started.has(formatEnvironmentTag(tag))) {
          process.failed(
            Object.assign(new Error('the spawner sidecar died while starting the command'), {
              code: 'ESPAWNER',
            }),
          );
        } else this.#relaunch(process);
      }
    });
  }

  /**
   * The launches' tags (`NAME=value`) that a live process carries: the sidecar started those before it
   * died. One pass over the process table answers for all of them.
   */
  #startedTags(launches: readonly SidecarProcess[]): Set<string> {
    const wanted = new Set<string>();
    const names = new Set<string>();
    for (const { request } of launches) {
      if (request.tag === undefined) continue;
      wanted.add(formatEnvironmentTag(request.tag));
      names.add(request.tag.name);
    }
    const found = new Set<string>();
    if (wanted.size === 0) return found;
    for (const pid of this.#source.listPids()) {
      const entry = this.#source.read(pid);
      if (entry === undefined || isDead(entry)) continue;
      for (const name of names) {
        const value = this.#source.environmentValue(pid, name);
        if (value === undefined) continue;
        const tag = formatEnvironmentTag({ name, value });
        if (wanted.has(tag)) found.add(tag);
      }
    }
    return found;
  }

  /** Starts an unanswered request directly and forwards what the direct process reports. */
  #relaunch(process: SidecarProcess): void {
    let child: LaunchedProcess;
    try {
      child = this.#fallback.launch(process.request);
    } catch (error) {
      process.failed(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    child.on('error', (error) => {
      if (child.pid === undefined) process.failed(error);
    });
    child.once('spawn', () => {
      if (child.stdout) process.stdout.attach(child.stdout as Socket);
      else process.stdout.lost();
      if (child.stderr) process.stderr.attach(child.stderr as Socket);
      else process.stderr.lost();
      process.spawned(child.pid!);
    });
    child.once('exit', (code, signal) => process.exit(code, signal));
  }
}

/** The error the sidecar's `child_process.spawn` reported, rebuilt as the direct spawn would have thrown it. */
function spawnError(answer: SpawnFailedMessage, request: LaunchRequest): Error {
  const error = new Error(answer.message) as NodeJS.ErrnoException & { spawnargs?: readonly string[] };
  if (answer.code !== undefined) error.code = answer.code;
  if (answer.errno !== undefined) error.errno = answer.errno;
  if (answer.syscall !== undefined) error.syscall = answer.syscall;
  if (answer.path !== undefined) error.path = answer.path;
  error.spawnargs = request.args;
  return error;
}
