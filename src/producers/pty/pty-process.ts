/**
 * A program running in a pseudo-terminal: input, resize, the rendered screen, the raw output written to a
 * capped file, and a stop that escalates — SIGINT to the foreground job, then SIGTERM and SIGKILL to the
 * whole tree (the pty's session, descendants, and tagged escapees, through the process layer's /proc
 * census). `stopped` resolves once the program has exited, nothing it started is left, the output file
 * is closed and the final screen is kept as text.
 */
import { closeSync, constants as fsConstants, openSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import {
  checkSpawnable,
  isDead,
  type LaunchRequest,
  type LifelineLink,
  type LimitBreach,
  type LimitedLaunch,
  launchEnvironment,
  type OutputDirectory,
  type OutputFileWriter,
  type ProcessSource,
  ProcessTags,
  type RequestedStopReason,
  readForegroundGroup,
  type Sandbox,
  type StopReason,
  statusFileBeside,
  type TerminationReport,
  TreeTerminator,
} from '../../process/index.js';
import type { CancelTimer, Clock } from '../../tasks/clock.js';
import type { Logger } from '../../tasks/index.js';
import { PtyClosedError } from './errors.js';
import { encodeInput, type PtyKeyName } from './keys.js';
import type { PtyChild, PtyRuntime } from './pty-runtime.js';
import { type ScreenView, TerminalScreen } from './terminal-screen.js';

/** Carries a random tag into every process the pty starts, so escapees can be found through /proc. */
export const PTY_TAG_VARIABLE = 'ERRAND_PTY_TAG';

const tags = new ProcessTags(PTY_TAG_VARIABLE);

/** Why a pty program ended: the process layer's stop reasons, as for a bash command. */
export type PtyExitReason = StopReason;
/** The reasons a stop can be requested for. */
export type PtyStopReason = RequestedStopReason;

export interface PtyExit {
  readonly reason: PtyExitReason;
  /** The program's exit code; null when a signal ended it or it never started. */
  readonly exitCode: number | null;
  /** The signal that ended the program, e.g. `SIGINT`. */
  readonly signal: NodeJS.Signals | null;
  /**
   * Signals sent to stop it, in order: `SIGINT` (foreground job), then `SIGHUP` and `SIGTERM`, then
   * `SIGKILL` (whole tree).
   */
  readonly stopSignals: readonly NodeJS.Signals[];
  /** Processes still running after the program ended on its own, which were then stopped. */
  readonly leftoverProcesses: number;
  /** Pids that outlived SIGKILL (empty unless something is stuck in the kernel). */
  readonly survivors: readonly number[];
  /** Raw output bytes, up to the output file's cap (the file holds fewer when `error` names a write failure). */
  readonly outputBytes: number;
  /** Why the program could not start (`spawn_error`), or why its output file is incomplete. */
  readonly error?: string;
  /** The resource limit it went past, for `memory_limit`, `cpu_limit` and `pids_limit`. */
  readonly limitBreach?: LimitBreach;
}

/** The settings a process takes from the producer's resolved options. */
export interface PtyProcessSettings {
  readonly shell: string;
  readonly shellArgs: readonly string[];
  readonly interactiveShellArgs: readonly string[];
  readonly terminalName: string;
  readonly scrollbackLines: number;
  readonly maxScreenBytes: number;
  readonly maxOutputFileBytes: number;
  readonly flowControlHighWaterBytes: number;
  readonly interruptGraceMs: number;
  readonly killGraceMs: number;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly processSource: ProcessSource;
  /** The runtime's lifeline: the program's tree carries its tag and is told to it. Default: none. */
  readonly lifeline?: LifelineLink | undefined;
}

/** What recognises a pty program's tree after the runtime that started it is gone. */
export interface PtyProcessFacts {
  readonly pid: number;
  readonly startTime: number;
  readonly bootId: string | undefined;
  /** `NAME=value`. */
  readonly tag: string;
  /** Where the lifeline records that it stopped the tree. */
  readonly statusFile: string | undefined;
}

export interface PtyProcessSpec {
  readonly runtime: PtyRuntime;
  readonly settings: PtyProcessSettings;
  /** A command line for the shell; absent: an interactive shell. */
  readonly command?: string;
  readonly cwd: string;
  /** The complete environment (the mark variable is added). */
  readonly env: Readonly<Record<string, string>>;
  readonly cols: number;
  readonly rows: number;
  /** The program's output file, created (see `createPtyOutputFile`). */
  readonly outputFile: OutputFileWriter;
  /** Stops the program with reason `timed_out` after this long. */
  readonly timeoutMs?: number;
  /** The sandbox the program runs in (the request is rewritten to start it under bwrap). */
  readonly sandbox?: Sandbox | undefined;
  /** Where `workspace-write` allows writes. Default: `cwd`. */
  readonly workspace?: string;
  /** The program's resource limits (the request is rewritten through the limit shim, outside any sandbox). */
  readonly limits?: LimitedLaunch | undefined;
}

export interface PtyProcess {
  /** The session leader's pid; undefined when the program never started. */
  readonly pid: number | undefined;
  readonly outputFile: string;
  readonly cols: number;
  readonly rows: number;
  /** True until the program exits (or when it never started: false). */
  readonly running: boolean;
  /** Raw output bytes so far (counted up to the output file's cap). */
  readonly outputBytes: number;
  /** Set once fully stopped. */
  readonly exit: PtyExit | undefined;
  /** Resolves once fully stopped; never rejects. */
  readonly stopped: Promise<PtyExit>;
  /** Writes raw input (text, control characters, escape sequences). */
  write(data: string): void;
  /** Types `text`, then presses `keys` (encoded for the program's current cursor-key mode). */
  writeInput(text: string, keys?: readonly PtyKeyName[]): void;
  resize(cols: number, rows: number): void;
  /** The current screen, non-consuming, within the screen byte budget. */
  screen(): ScreenView;
  /** The consuming delta for the model (see `TerminalScreen`), with a marker when lines were lost. */
  readDelta(): string;
  /** Counts the current screen as read. */
  markScreenSeen(): void;
  /** Calls `listener` when the screen may have changed and when the program is fully stopped. */
  onChange(listener: () => void): () => void;
  /** Requests the stop sequence. Idempotent; the first reason wins. */
  cancel(reason?: PtyStopReason): void;
  /** The program's root facts once it runs (undefined without /proc or when it never started). */
  processFacts(): PtyProcessFacts | undefined;
}

export function spawnPtyProcess(spec: PtyProcessSpec): PtyProcess {
  return new PtyProcessHandle(spec);
}

/**
 * Creates a program's output file in `directory` (mode 0600), capped at `maxOutputFileBytes`. Rejects when
 * the directory or the file cannot be created; a later write failure is logged and reported in the exit.
 */
export async function createPtyOutputFile(
  directory: OutputDirectory,
  settings: Pick<PtyProcessSettings, 'maxOutputFileBytes' | 'flowControlHighWaterBytes' | 'logger'>,
): Promise<OutputFileWriter> {
  const file: OutputFileWriter = directory.newFile({
    maxBytes: settings.maxOutputFileBytes,
    // The terminal is paused on the file's backlog plus the renderer's (see `#onData`), not on this mark.
    highWaterMarkBytes: settings.flowControlHighWaterBytes,
    onError: (error, whileOpening) => {
      if (whileOpening) return;
      settings.logger.warn('pty output file write failed; the output file is incomplete', {
        outputFile: file.path,
        error: error.message,
      });
    },
  });
  if (!(await file.open())) throw file.error ?? new Error(`could not create ${file.path}`);
  return file;
}

const signalNames = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, number]) => [number, name as NodeJS.Signals]),
);

// node-pty reports a failed chdir or exec in the child as exit code 1 with one of these lines.
const CHILD_SPAWN_FAILURE = /^(?:chdir\(2\)|execvp\(3\)) failed\.: [^\r\n]*\r?\n?$/;
const HEAD_BYTES = 256;

class PtyProcessHandle implements PtyProcess {
  readonly outputFile: string;
  readonly stopped: Promise<PtyExit>;
  readonly #settings: PtyProcessSettings;
  readonly #screen: TerminalScreen;
  readonly #file: OutputFileWriter;
  readonly #listeners = new Set<() => void>();
  #resolveStopped!: (exit: PtyExit) => void;
  #child: PtyChild | undefined;
  #terminator: TreeTerminator | undefined;
  #pid: number | undefined;
  /** The program's pid and start time, when /proc is there to tell when it ended. */
  #leader: { readonly pid: number; readonly startTime: number } | undefined;
  #leaderExited = false;
  #processFacts: PtyProcessFacts | undefined;
  #unwatch: (() => void) | undefined;
  #exit: PtyExit | undefined;
  #stopReason: PtyStopReason | undefined;
  #limits: LimitedLaunch | undefined;
  readonly #stopSignals: NodeJS.Signals[] = [];
  #stopStep: CancelTimer | undefined;
  #runtimeCap: CancelTimer | undefined;
  #paused = false;
  #head = '';
  #slaveHold: number | undefined;

  constructor(spec: PtyProcessSpec) {
    this.#settings = spec.settings;
    this.outputFile = spec.outputFile.path;
    this.stopped = new Promise((resolveStopped) => {
      this.#resolveStopped = resolveStopped;
    });
    this.#screen = new TerminalScreen(spec.runtime.Terminal, {
      cols: spec.cols,
      rows: spec.rows,
      scrollbackLines: spec.settings.scrollbackLines,
      maxViewBytes: spec.settings.maxScreenBytes,
      onListenerError: (error) =>
        spec.settings.logger.warn('pty: a screen change listener failed', { error: messageOf(error) }),
    });
    this.#file = spec.outputFile;
    this.#screen.onChange(() => this.#changed());
    this.#file.onProgress(() => this.#maybeResume());
    this.#spawn(spec);
  }

  get pid(): number | undefined {
    return this.#pid;
  }

  get cols(): number {
    return this.#screen.cols;
  }

  get rows(): number {
    return this.#screen.rows;
  }

  get running(): boolean {
    return this.#child !== undefined && !this.#leaderExited && !this.#leaderEnded();
  }

  get exit(): PtyExit | undefined {
    return this.#exit;
  }

  get outputBytes(): number {
    return this.#file.bytes;
  }

  write(data: string): void {
    if (!this.running) throw new PtyClosedError(this.#pid);
    if (data !== '') this.#child!.write(data);
  }

  writeInput(text: string, keys: readonly PtyKeyName[] = []): void {
    this.write(encodeInput(text, keys, { applicationCursorKeys: this.#screen.applicationCursorKeys }));
  }

  resize(cols: number, rows: number): void {
    if (!this.running) throw new PtyClosedError(this.#pid);
    // The program learns the size (SIGWINCH) from the pty; the renderer must agree with it.
    this.#child!.resize(cols, rows);
    this.#screen.resize(cols, rows);
  }

  screen(): ScreenView {
    return this.#screen.view();
  }

  readDelta(): string {
    const delta = this.#screen.readDelta();
    if (!delta.linesLost) return delta.text;
    const marker = `[... earlier lines left the terminal's scrollback before they were read; full output: ${this.outputFile} ...]`;
    return delta.text === '' ? marker : `${marker}\n${delta.text}`;
  }

  markScreenSeen(): void {
    this.#screen.markScreenSeen();
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  processFacts(): PtyProcessFacts | undefined {
    return this.#processFacts;
  }

  cancel(reason: PtyStopReason = 'cancelled'): void {
    if (this.#stopReason !== undefined || !this.running) return;
    this.#stopReason = reason;
    this.#runtimeCap?.();
    this.#interrupt();
    this.#stopStep = this.#settings.clock.schedule(this.#settings.interruptGraceMs, () => this.#terminate());
  }

  // ------------------------------------------------------------------ starting

  #spawn(spec: PtyProcessSpec): void {
    const { settings } = spec;
    const file = settings.shell;
    const args =
      spec.command === undefined ? [...settings.interactiveShellArgs] : [...settings.shellArgs, spec.command];
    const failure = checkSpawnable(file, spec.cwd, spec.env.PATH);
    if (failure !== undefined) {
      this.#failToSpawn(failure);
      return;
    }
    const tag = tags.next();
    const lifeline = settings.lifeline;
    // Every process of the tree carries the lifeline's tag, so its sidecar finds even untold ones.
    const env = lifeline === undefined ? spec.env : { ...spec.env, [lifeline.tag.name]: lifeline.tag.value };
    const program: LaunchRequest = { file, args, cwd: spec.cwd, env, tag };
    // The same pure rewrite the bash executor applies: the terminal's leader is bwrap, the program its child.
    const confined = spec.sandbox?.confine(program, spec.workspace) ?? program;
    const startedAt = settings.clock.now();
    let child: PtyChild;
    let request: LaunchRequest;
    try {
      request = spec.limits?.confine(confined) ?? confined;
    } catch (error) {
      this.#failToSpawn(`Could not make the resource-limit group of ${file}: ${messageOf(error)}`);
      return;
    }
    this.#limits = spec.limits;
    spec.limits?.onBreach((breach) => this.cancel(breach.reason));
    try {
      child = spec.runtime.spawn(request.file, [...request.args], {
        name: settings.terminalName,
        cols: spec.cols,
        rows: spec.rows,
        cwd: request.cwd,
        env: launchEnvironment(request),
        encoding: null,
      });
    } catch (error) {
      this.#failToSpawn(`Could not start ${file} in a pseudo-terminal: ${messageOf(error)}`);
      return;
    }
    this.#child = child;
    this.#pid = child.pid;
    this.#slaveHold = holdSlave(child);
    const source = settings.processSource;
    const root = source.read(child.pid);
    if (root !== undefined) {
      // node-pty made the child a session (and group) leader: its pid names the whole tree.
      const rootIdentity = { pid: child.pid, startTime: root.startTime };
      this.#leader = rootIdentity;
      const statusFile = statusFileBeside(spec.outputFile.path);
      this.#processFacts = Object.freeze({
        pid: child.pid,
        startTime: root.startTime,
        bootId: source.bootId?.(),
        tag: `${tag.name}=${tag.value}`,
        statusFile: lifeline === undefined ? undefined : statusFile,
      });
      this.#unwatch = lifeline?.watch({ ...rootIdentity, tag, statusFile });
      this.#terminator = new TreeTerminator({
        root: rootIdentity,
        source,
        clock: settings.clock,
        killGraceMs: settings.killGraceMs,
        politeSignals: TERMINAL_POLITE_SIGNALS,
        tag,
        // Alive or a zombie: either way its pid, and so its group id, is still ours.
        rootAlive: () => source.read(rootIdentity.pid)?.startTime === rootIdentity.startTime,
        newerPidsUntil: startedAt + 1000,
        logger: settings.logger,
      });
    }
    // Socket errors other than the EIO of a closed terminal would otherwise be thrown by node-pty.
    // EIO is how a terminal reports that its last writer closed: the normal end, not an error.
    (child as { on?: (event: string, listener: (error: NodeJS.ErrnoException) => void) => void }).on?.(
      'error',
      (error) => {
        if (error.code === 'EIO' || error.code === 'EAGAIN') return;
        settings.logger.warn('pty socket error', { pid: child.pid, error: error.message });
      },
    );
    child.onData((chunk) => this.#onData(chunk));
    child.onExit(({ exitCode, signal }) => this.#onLeaderExit(exitCode, signal));
    if (spec.timeoutMs !== undefined) {
      this.#runtimeCap = settings.clock.schedule(spec.timeoutMs, () => this.cancel('timed_out'));
    }
  }

  #failToSpawn(message: string): void {
    queueMicrotask(() => {
      void this.#finish({ reason: 'spawn_error', exitCode: null, signal: null, error: message }, 0, []);
    });
  }

  // ------------------------------------------------------------------ output

  #onData(data: Uint8Array | string): void {
    const chunk = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (this.#head.length < HEAD_BYTES)
      this.#head += Buffer.from(chunk.subarray(0, HEAD_BYTES)).toString('latin1');
    // The file takes what its cap leaves room for; the screen renders everything.
    this.#file.write(chunk);
    this.#screen.write(chunk);
    if (this.#file.full) this.cancel('output_limit');
    if (!this.#paused && this.#backlog() > this.#settings.flowControlHighWaterBytes) {
      this.#paused = true;
      this.#child?.pause();
    }
  }

  #backlog(): number {
    return this.#file.queuedBytes + this.#screen.pendingBytes;
  }

  #maybeResume(): void {
    if (this.#paused && this.#backlog() <= this.#settings.flowControlHighWaterBytes / 2) {
      this.#paused = false;
      if (!this.#leaderExited) this.#child?.resume();
    }
  }

  #changed(): void {
    this.#maybeResume();
    for (const listener of [...this.#listeners]) listener();
  }

  // ------------------------------------------------------------------ stopping

  /**
   * SIGINT to the terminal's foreground process group, the job a person would stop with Ctrl-C.
   * Signalling it directly (rather than writing `\x03`) works even when the program turned off the
   * terminal's signal characters (raw mode), and does not queue behind unread input. Only a group the
   * census attributes to this tree is signalled.
   */
  #interrupt(): void {
    this.#stopSignals.push('SIGINT');
    const pid = this.#pid;
    const census = this.#terminator?.census();
    if (pid !== undefined && census !== undefined) {
      const foreground = readForegroundGroup(pid);
      const ours = (group: number) => census.members.some((member) => member.pgid === group);
      // Before the shell has a foreground job (or a terminal), its own group is the job.
      const group = foreground !== undefined && ours(foreground) ? foreground : ours(pid) ? pid : undefined;
      if (group !== undefined) {
        try {
          process.kill(-group, 'SIGINT');
        } catch {
          // Gone meanwhile; the escalation covers whatever is left.
        }
      }
      return;
    }
    // No /proc: the line discipline turns Ctrl-C into SIGINT for the foreground job.
    try {
      this.#child?.write('\u0003');
    } catch {
      // The terminal is closing; the escalation signals directly.
    }
  }

  /**
   * SIGHUP and SIGTERM to the whole tree, SIGKILL after the grace (the terminator's schedule). The
   * hangup is what a closed terminal sends: it ends an interactive shell, which ignores SIGTERM.
   */
  #terminate(): void {
    if (this.#leaderExited) return;
    this.#stopSignals.push(...TERMINAL_POLITE_SIGNALS);
    if (this.#terminator) {
      void this.#terminator.terminate();
      return;
    }
    // No /proc: the leader's process group is the reach there is.
    for (const signal of TERMINAL_POLITE_SIGNALS) signalGroup(this.#pid, signal);
    signalGroup(this.#pid, 'SIGCONT');
    this.#stopStep = this.#settings.clock.schedule(this.#settings.killGraceMs, () => {
      if (this.#leaderExited) return;
      this.#stopSignals.push('SIGKILL');
      signalGroup(this.#pid, 'SIGKILL');
    });
  }

  /**
   * Whether the program has already exited although node-pty has not said so yet: it reports the exit
   * only once the terminal is closed, a grace (about 200 ms) later. Until then input would go nowhere
   * and a stop would count a program that ended by itself as killed.
   */
  #leaderEnded(): boolean {
    const leader = this.#leader;
    if (leader === undefined) return false;
    const entry = this.#settings.processSource.read(leader.pid);
    return entry === undefined || entry.startTime !== leader.startTime || isDead(entry);
  }

  #onLeaderExit(exitCode: number, signalNumber: number | undefined): void {
    if (this.#leaderExited) return;
    this.#leaderExited = true;
    if (this.#slaveHold !== undefined) closeQuietly(this.#slaveHold);
    this.#slaveHold = undefined;
    this.#stopStep?.();
    this.#runtimeCap?.();
    const signal = signalNumber ? (signalNames.get(signalNumber) ?? null) : null;
    void this.#settle(signal === null ? exitCode : null, signal);
  }

  async #settle(exitCode: number | null, signal: NodeJS.Signals | null): Promise<void> {
    // Read at once: an OOM-killed leader exits before the next poll of its group's counters.
    this.#limits?.check(signal);
    const terminating = this.#terminator?.terminating ?? false;
    let report: TerminationReport | undefined;
    try {
      // A stop in progress finishes; otherwise whatever the program left behind is stopped now.
      report = await this.#terminator?.sweep();
    } catch (error) {
      this.#settings.logger.warn('pty: stopping what the program left behind failed', {
        pid: this.#pid,
        error: messageOf(error),
      });
    }
    if (terminating && report?.escalated) this.#stopSignals.push('SIGKILL');
    // Read again once the tree is gone: a refused fork can show in the counters only after the leader's
    // exit (a fork bomb's shell often exits first), and the final counts decide how the program ended.
    this.#limits?.check();
    let reason: PtyExitReason = this.#stopReason ?? 'completed';
    const breach = this.#limits?.breach;
    if (reason === 'completed' && breach !== undefined) reason = breach.reason;
    let error: string | undefined;
    if (reason === 'completed' && exitCode === 1 && CHILD_SPAWN_FAILURE.test(this.#head)) {
      reason = 'spawn_error';
      error = this.#head.trim();
    }
    await this.#finish(
      { reason, exitCode, signal, ...(error === undefined ? {} : { error }) },
      terminating ? 0 : (report?.signalled ?? 0),
      report?.survivors ?? [],
    );
  }

  async #finish(
    facts: Pick<PtyExit, 'reason' | 'exitCode' | 'signal' | 'error'>,
    leftoverProcesses: number,
    survivors: readonly number[],
  ): Promise<void> {
    await this.#screen.freeze();
    await this.#file.close();
    // The tree is gone: its group goes (with anything the census missed) before the end is told.
    await this.#limits?.release();
    const breach = this.#limits?.breach;
    const error =
      facts.error ??
      (this.#file.error === undefined ? undefined : `output file: ${this.#file.error.message}`);
    this.#exit = Object.freeze({
      reason: facts.reason,
      exitCode: facts.exitCode,
      signal: facts.signal,
      stopSignals: Object.freeze([...this.#stopSignals]),
      leftoverProcesses,
      survivors: Object.freeze([...survivors]),
      outputBytes: this.#file.bytes,
      ...(error === undefined ? {} : { error }),
      ...(breach !== undefined && breach.reason === facts.reason ? { limitBreach: breach } : {}),
    });
    this.#unwatch?.();
    this.#resolveStopped(this.#exit);
    for (const listener of [...this.#listeners]) listener();
    this.#listeners.clear();
  }
}

/**
 * Opens the terminal's slave side (write-only, never as a controlling terminal) and keeps it open until
 * the program has exited. Without it, the hang-up the master sees when the program's last descriptor
 * closes makes libuv report end-of-file after a partial read, dropping up to a few KiB of final output;
 * held open, the master drains normally and node-pty closes it a short grace after the exit.
 */
function holdSlave(child: PtyChild): number | undefined {
  if (typeof child.ptsName !== 'string' || child.ptsName === '') return undefined;
  try {
    return openSync(child.ptsName, fsConstants.O_WRONLY | fsConstants.O_NOCTTY);
  } catch {
    return undefined;
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed: nothing is held any more.
  }
}

const TERMINAL_POLITE_SIGNALS: readonly NodeJS.Signals[] = Object.freeze(['SIGHUP', 'SIGTERM']);

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
