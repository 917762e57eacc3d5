/** Options of the bash executor, their documented defaults and their validation. */
import { tmpdir } from 'node:os';
import {
  createSpawnLauncher,
  memoizedSource,
  type ProcessLauncher,
  type ProcessSource,
  procfsSource,
  resolveSandbox,
  type Sandbox,
  type SandboxSetting,
  type SendSignal,
  type Spawner,
} from '../../process/index.js';
import { type Clock, systemClock } from '../../tasks/clock.js';
import { InvalidArgumentError } from '../../tasks/index.js';
import { createConsoleLogger, type Logger } from '../../tasks/logger.js';
import { optionKeys, rejectUnknownOptions } from '../../tasks/option-keys.js';

/** The largest non-consuming snapshot a UI may read, in bytes. */
export const OUTPUT_SNAPSHOT_BYTES = 8192;

/** The environment variable that tags every process of a command (finds escaped daemons). */
export const PROCESS_TAG_VARIABLE = 'ERRAND_PROCESS_TAG';

const bashConsoleLogger = createConsoleLogger('errand:bash');

/** Options of `new BashExecutor()`. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface BashExecutorOptions {
  /** The shell, run as `<shell> -c <command>`. A bare name is looked up in the command's PATH. Default `bash`. */
  readonly shell?: string;
  /** Where the private output directory is created (mkdtemp, mode 0700). Default `os.tmpdir()`. */
  readonly outputDirectoryParent?: string;
  /** Output kept in memory per command (the newest bytes). Default 1 MiB; at least 8192. */
  readonly maxBufferedBytes?: number;
  /** The most one consuming read returns; also what is kept in memory after a command stops. Default 64 KiB. */
  readonly maxReadBytes?: number;
  /** The output file's cap; a command that writes more is killed with reason `output_limit`. Default 1 GiB. */
  readonly maxOutputFileBytes?: number;
  /** Output queued for the disk before the command's pipes are paused (they resume at a quarter). Default 4 MiB. */
  readonly spillHighWaterMarkBytes?: number;
  /** Time between SIGTERM and SIGKILL, and again for killed processes to vanish. Default 2000 ms. */
  readonly killGraceMs?: number;
  /** After the shell exits, how long to wait for its pipes to close before acting on holders. Default 100 ms. */
  readonly exitGraceMs?: number;
  /**
   * Whether processes the shell leaves behind when it exits (background jobs, daemons, anything holding
   * its pipes) are terminated. Default true: a command that reports "completed" while its children run
   * on is a leak (orphans holding ports). Set false to let them live; their output is then no longer read.
   */
  readonly killProcessGroupOnExit?: boolean;
  /**
   * Whether every command gets `ERRAND_PROCESS_TAG=<random>` in its environment so descendants that left
   * its session (setsid, double fork) are still found and stopped. Default true.
   */
  readonly tagEnvironment?: boolean;
  /** Keep the output directory when the executor is disposed. Default false (it is removed). */
  readonly keepOutputFiles?: boolean;
  readonly clock?: Clock;
  /**
   * Starts a process the way `child_process.spawn` does, for the default launcher; injectable to count
   * or fail spawns in tests. Default `child_process.spawn`. Not together with `launcher`.
   */
  readonly spawn?: Spawner;
  /**
   * How commands are started: in their own session and process group, with the tag in their environment,
   * stdin on /dev/null and stdout and stderr piped. Default: `spawn` from this process.
   */
  readonly launcher?: ProcessLauncher;
  /**
   * The sandbox every command runs in unless its request names another: a profile (`read-only`,
   * `workspace-write`, `full`), `{ profile, network }`, or a resolved `Sandbox`. Enforced by bubblewrap;
   * when a profile needs it and `bwrap` is missing, the executor is not created (`SANDBOX_UNAVAILABLE`,
   * naming Debian's `bubblewrap` package). Default: none (commands run with the user's own rights).
   */
  readonly sandbox?: SandboxSetting;
  /** Where the process table is read from. Default /proc. */
  readonly processSource?: ProcessSource;
  /** Sends a signal to a pid (negative: a process group). Default `process.kill`. */
  readonly sendSignal?: SendSignal;
  readonly logger?: Logger;
}

/** Every key of `BashExecutorOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const BASH_EXECUTOR_OPTION_KEYS = optionKeys<BashExecutorOptions>()({
  shell: true,
  outputDirectoryParent: true,
  maxBufferedBytes: true,
  maxReadBytes: true,
  maxOutputFileBytes: true,
  spillHighWaterMarkBytes: true,
  killGraceMs: true,
  exitGraceMs: true,
  killProcessGroupOnExit: true,
  tagEnvironment: true,
  keepOutputFiles: true,
  clock: true,
  spawn: true,
  launcher: true,
  sandbox: true,
  processSource: true,
  sendSignal: true,
  logger: true,
});

export interface ResolvedExecutorOptions {
  readonly shell: string;
  readonly outputDirectoryParent: string;
  readonly maxBufferedBytes: number;
  readonly maxReadBytes: number;
  readonly maxOutputFileBytes: number;
  readonly spillHighWaterMarkBytes: number;
  readonly killGraceMs: number;
  readonly exitGraceMs: number;
  readonly killProcessGroupOnExit: boolean;
  readonly tagEnvironment: boolean;
  readonly keepOutputFiles: boolean;
  readonly clock: Clock;
  readonly launcher: ProcessLauncher;
  readonly sandbox: Sandbox | undefined;
  readonly processSource: ProcessSource;
  readonly sendSignal: SendSignal | undefined;
  readonly logger: Logger;
}

export const BASH_EXECUTOR_DEFAULTS = Object.freeze({
  shell: 'bash',
  maxBufferedBytes: 1024 * 1024,
  maxReadBytes: 64 * 1024,
  maxOutputFileBytes: 1024 * 1024 * 1024,
  spillHighWaterMarkBytes: 4 * 1024 * 1024,
  killGraceMs: 2000,
  exitGraceMs: 100,
  killProcessGroupOnExit: true,
  tagEnvironment: true,
  keepOutputFiles: false,
});

export function integerOption(field: string, value: unknown, fallback: number, minimum: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    throw new InvalidArgumentError(field, `an integer of at least ${minimum}`, value);
  }
  return value;
}

export function booleanOption(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(field, 'a boolean', value);
  return value;
}

function nonEmptyString(field: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value === '' || value.includes('\0')) {
    throw new InvalidArgumentError(field, 'a non-empty string without NUL characters', value);
  }
  return value;
}

function functionOption<T>(field: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function')
    throw new InvalidArgumentError(field, 'a function', value);
  return value;
}

function launcherOption(options: BashExecutorOptions): ProcessLauncher {
  const spawn = functionOption('spawn', options.spawn);
  const launcher = options.launcher;
  if (launcher === undefined) return createSpawnLauncher(spawn);
  if (typeof launcher !== 'object' || launcher === null || typeof launcher.launch !== 'function') {
    throw new InvalidArgumentError('launcher', 'an object with a launch function', launcher);
  }
  if (spawn !== undefined) {
    throw new InvalidArgumentError(
      'launcher',
      'absent when `spawn` is given (the launcher spawns)',
      launcher,
    );
  }
  return launcher;
}

export function resolveExecutorOptions(options: BashExecutorOptions = {}): ResolvedExecutorOptions {
  rejectUnknownOptions(options, BASH_EXECUTOR_OPTION_KEYS, { where: 'BashExecutor' });
  const defaults = BASH_EXECUTOR_DEFAULTS;
  const maxBufferedBytes = integerOption(
    'maxBufferedBytes',
    options.maxBufferedBytes,
    defaults.maxBufferedBytes,
    OUTPUT_SNAPSHOT_BYTES,
  );
  const maxReadBytes = integerOption(
    'maxReadBytes',
    options.maxReadBytes,
    Math.min(defaults.maxReadBytes, maxBufferedBytes),
    1,
  );
  if (maxReadBytes > maxBufferedBytes) {
    throw new InvalidArgumentError(
      'maxReadBytes',
      `at most maxBufferedBytes (${maxBufferedBytes})`,
      maxReadBytes,
    );
  }
  if (options.clock !== undefined && (typeof options.clock !== 'object' || options.clock === null)) {
    throw new InvalidArgumentError('clock', 'a Clock', options.clock);
  }
  return {
    shell: nonEmptyString('shell', options.shell, defaults.shell),
    outputDirectoryParent: nonEmptyString('outputDirectoryParent', options.outputDirectoryParent, tmpdir()),
    maxBufferedBytes,
    maxReadBytes,
    maxOutputFileBytes: integerOption(
      'maxOutputFileBytes',
      options.maxOutputFileBytes,
      defaults.maxOutputFileBytes,
      1,
    ),
    spillHighWaterMarkBytes: integerOption(
      'spillHighWaterMarkBytes',
      options.spillHighWaterMarkBytes,
      defaults.spillHighWaterMarkBytes,
      1024,
    ),
    killGraceMs: integerOption('killGraceMs', options.killGraceMs, defaults.killGraceMs, 1),
    exitGraceMs: integerOption('exitGraceMs', options.exitGraceMs, defaults.exitGraceMs, 0),
    killProcessGroupOnExit: booleanOption(
      'killProcessGroupOnExit',
      options.killProcessGroupOnExit,
      defaults.killProcessGroupOnExit,
    ),
    tagEnvironment: booleanOption('tagEnvironment', options.tagEnvironment, defaults.tagEnvironment),
    keepOutputFiles: booleanOption('keepOutputFiles', options.keepOutputFiles, defaults.keepOutputFiles),
    clock: options.clock ?? systemClock,
    launcher: launcherOption(options),
    sandbox: options.sandbox === undefined ? undefined : resolveSandbox(options.sandbox, 'sandbox'),
    processSource: memoizedSource(options.processSource ?? procfsSource()),
    sendSignal: functionOption('sendSignal', options.sendSignal),
    logger: options.logger ?? bashConsoleLogger,
  };
}
