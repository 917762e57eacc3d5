/** Options of the pty producer, their documented defaults, and their validation (before any side effect). */

import {
  memoizedSource,
  type ProcessSource,
  procfsSource,
  resolveSandbox,
  type Sandbox,
  type SandboxSetting,
} from '../../process/index.js';
import { MAX_LABEL_LENGTH } from '../../registry/validate-spec.js';
import { type Clock, systemClock } from '../../tasks/clock.js';
import { consoleLogger, InvalidArgumentError, type Logger, type TaskService } from '../../tasks/index.js';
import { optionKeys, validateLoggerOption } from '../../tasks/option-keys.js';
import type { PtyModuleLoader } from './pty-runtime.js';

/**
 * Options of `createPtyProducer`. A key not listed here is rejected with `UNKNOWN_OPTION`; the old names
 * `maxRuntimeMs` and `terminateGraceMs` are answered with their new ones, `runtimeCapMs` and `killGraceMs`.
 */
export interface PtyProducerOptions {
  /** The task service the producer registers its `pty` tasks with and authorizes every access through. */
  readonly tasks: TaskService;
  /** The shell that runs a command line. Default `bash`. */
  readonly shell?: string;
  /** Arguments placed before the command line. Default `['-c']`. */
  readonly shellArgs?: readonly string[];
  /** Arguments that start the shell interactively when a task has no command. Default `['-i']`. */
  readonly interactiveShellArgs?: readonly string[];
  /** `TERM` for the program; the renderer emulates xterm. Default `xterm-256color`. */
  readonly terminalName?: string;
  /** Size of a terminal when the caller gives none. Default 120 columns × 40 rows. */
  readonly defaultCols?: number;
  readonly defaultRows?: number;
  /** Largest accepted size (the smallest is 10 × 2). Default 500 columns × 200 rows. */
  readonly maxCols?: number;
  readonly maxRows?: number;
  /** Rendered lines kept above the screen, the in-memory bound of a task's output. Default 1000. */
  readonly scrollbackLines?: number;
  /** Budget of a screen snapshot, in UTF-8 bytes (at most 8192). Default 8192. */
  readonly maxScreenBytes?: number;
  /** Cap of a task's raw output file; past it the program is stopped (`output_limit`). Default 1 GiB. */
  readonly maxOutputFileBytes?: number;
  /** Where the private per-runtime output directory is created. Default `os.tmpdir()`. */
  readonly outputRoot?: string;
  /** Keep the output directory when the producer is disposed. Default false (it is removed). */
  readonly keepOutputFiles?: boolean;
  /**
   * Unwritten plus unrendered bytes above which the terminal is paused (back-pressure). 4096 to 64 MiB.
   * Default 1 MiB.
   */
  readonly flowControlHighWaterBytes?: number;
  /** After the interrupt (SIGINT to the foreground job), how long to wait before SIGTERM. Default 1000 ms. */
  readonly interruptGraceMs?: number;
  /**
   * After SIGTERM, how long to wait before SIGKILL, and again for killed processes to disappear. Processes
   * a program leaves behind when it exits get the same SIGTERM, grace, SIGKILL. Named like the bash
   * executor's grace. Default 2000 ms.
   */
  readonly killGraceMs?: number;
  /**
   * Runtime cap of a task; past it the program is stopped (`timed_out`). A request's `timeoutMs` overrides
   * it. Default none.
   */
  readonly runtimeCapMs?: number;
  /** Largest input one write accepts, in UTF-8 bytes. Default 65536. */
  readonly maxInputBytes?: number;
  /**
   * Longest command line `start` accepts, in UTF-8 bytes; a longer one is refused. 1 to 131071 (Linux
   * passes no longer argument to a program). Default 100000.
   */
  readonly maxCommandBytes?: number;
  /**
   * A task's label (its description, else its command, on one line) is shortened to this many characters.
   * 8 to 2000 (the longest label the task service accepts). Default 200.
   */
  readonly maxLabelChars?: number;
  /** `pty_write` returns once the screen has been quiet this long after the input. Default 150 ms. */
  readonly settleQuietMs?: number;
  /** `pty_write`'s default bound on that wait (and on `wait_for`). Default 2000 ms. */
  readonly settleTimeoutMs?: number;
  /** The largest `timeout_ms` a `pty_write` call may ask for. Default 30000 ms. */
  readonly maxSettleTimeoutMs?: number;
  /** The shortest interval between `outputBytes` updates of a running task's detail. Default 250 ms. */
  readonly detailIntervalMs?: number;
  /** Finished tasks whose final screen stays readable through `screen()`. Default 100. */
  readonly retainFinishedScreens?: number;
  /** Pass this process's environment to programs (under the session's). Default true. */
  readonly inheritProcessEnv?: boolean;
  /** Environment for every program, over the inherited one and under the session's. */
  readonly env?: Readonly<Record<string, string>>;
  /** The task's presentation budget for model-facing text (`outputLimitBytes`). Default: the controller's. */
  readonly outputLimitBytes?: number;
  /** Loads node-pty. Default: a dynamic import of the optional dependency. */
  readonly loadPty?: PtyModuleLoader;
  readonly logger?: Logger;
  /** Schedules the stop steps, runtime caps and screen waits. Default: the system clock. */
  readonly clock?: Clock;
  /** Where processes are looked up (the stop census). Default: /proc, memoized per event-loop turn. */
  readonly processSource?: ProcessSource;
  /**
   * The sandbox every program runs in unless its request names another: a profile (`read-only`,
   * `workspace-write`, `full`), `{ profile, network }`, or a `Sandbox`, enforced by bubblewrap. When a
   * profile needs bwrap and it is missing, the producer is not created (`SANDBOX_UNAVAILABLE`). Default:
   * none.
   */
  readonly sandbox?: SandboxSetting;
}

/** Every key of `PtyProducerOptions`; any other key is rejected with `UNKNOWN_OPTION`. */
export const PTY_PRODUCER_OPTION_KEYS = optionKeys<PtyProducerOptions>()({
  tasks: true,
  shell: true,
  shellArgs: true,
  interactiveShellArgs: true,
  terminalName: true,
  defaultCols: true,
  defaultRows: true,
  maxCols: true,
  maxRows: true,
  scrollbackLines: true,
  maxScreenBytes: true,
  maxOutputFileBytes: true,
  outputRoot: true,
  keepOutputFiles: true,
  flowControlHighWaterBytes: true,
  interruptGraceMs: true,
  killGraceMs: true,
  runtimeCapMs: true,
  maxInputBytes: true,
  maxCommandBytes: true,
  maxLabelChars: true,
  settleQuietMs: true,
  settleTimeoutMs: true,
  maxSettleTimeoutMs: true,
  detailIntervalMs: true,
  retainFinishedScreens: true,
  inheritProcessEnv: true,
  env: true,
  outputLimitBytes: true,
  loadPty: true,
  logger: true,
  clock: true,
  processSource: true,
  sandbox: true,
});

/** Options renamed since they were published: the old name → the new one, for the `UNKNOWN_OPTION` hint. */
export const PTY_RENAMED_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  maxRuntimeMs: 'runtimeCapMs',
  terminateGraceMs: 'killGraceMs',
});

export const MAX_SCREEN_BYTES = 8192;
export const MIN_COLS = 10;
export const MIN_ROWS = 2;
/** The longest single argument Linux passes to a program (MAX_ARG_STRLEN, 128 KiB, less its NUL). */
const MAX_COMMAND_BYTES = 131_071;
/** The most bytes waiting to be written or rendered that `flowControlHighWaterBytes` may allow. */
const MAX_FLOW_CONTROL_HIGH_WATER_BYTES = 64 * 1024 ** 2;

export const PTY_PRODUCER_DEFAULTS = Object.freeze({
  shell: 'bash',
  shellArgs: Object.freeze(['-c']) as readonly string[],
  interactiveShellArgs: Object.freeze(['-i']) as readonly string[],
  terminalName: 'xterm-256color',
  defaultCols: 120,
  defaultRows: 40,
  maxCols: 500,
  maxRows: 200,
  scrollbackLines: 1000,
  maxScreenBytes: MAX_SCREEN_BYTES,
  maxOutputFileBytes: 1024 ** 3,
  keepOutputFiles: false,
  flowControlHighWaterBytes: 1024 ** 2,
  interruptGraceMs: 1000,
  killGraceMs: 2000,
  maxInputBytes: 65536,
  maxCommandBytes: 100_000,
  maxLabelChars: 200,
  settleQuietMs: 150,
  settleTimeoutMs: 2000,
  maxSettleTimeoutMs: 30_000,
  detailIntervalMs: 250,
  retainFinishedScreens: 100,
  inheritProcessEnv: true,
});

type Optional = 'outputRoot' | 'runtimeCapMs' | 'outputLimitBytes' | 'loadPty';

/** Every option but the task service, with its default applied; the optional ones stay undefined when not given. */
export type ResolvedPtyProducerOptions = Readonly<
  Required<Omit<PtyProducerOptions, 'tasks' | 'sandbox' | Optional>>
> & {
  readonly [Key in Optional]: PtyProducerOptions[Key] | undefined;
} & {
  /** The resolved default sandbox; undefined: none. */
  readonly sandbox: Sandbox | undefined;
};

function integer(field: string, value: unknown, fallback: number, minimum: number, maximum?: number): number {
  if (value === undefined) return fallback;
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < minimum ||
    (maximum !== undefined && value > maximum)
  ) {
    const range = maximum === undefined ? `at least ${minimum}` : `from ${minimum} to ${maximum}`;
    throw new InvalidArgumentError(field, `an integer ${range}`, value);
  }
  return value;
}

function text(field: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value.trim() === '' || value.includes('\0')) {
    throw new InvalidArgumentError(field, 'a non-empty string without NUL characters', value);
  }
  return value;
}

function strings(field: string, value: unknown, fallback: readonly string[]): readonly string[] {
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || item.includes('\0'))) {
    throw new InvalidArgumentError(field, 'an array of strings without NUL characters', value);
  }
  return Object.freeze([...value]);
}

function flag(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(field, 'a boolean', value);
  return value;
}

/** Validates an environment record: string keys without `=` or NUL, string values without NUL. */
export function validateEnvironment(field: string, value: unknown): Readonly<Record<string, string>> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(field, 'an object of strings', value);
  }
  for (const [name, entry] of Object.entries(value)) {
    if (name === '' || name.includes('=') || name.includes('\0')) {
      throw new InvalidArgumentError(`${field} name`, 'a name without "=" or NUL', name);
    }
    if (typeof entry !== 'string' || entry.includes('\0')) {
      throw new InvalidArgumentError(`${field}.${name}`, 'a string without NUL characters', entry);
    }
  }
  return value as Readonly<Record<string, string>>;
}

/** Resolves every option but `tasks` (`createPtyProducer` checks it, and rejects unknown keys). */
export function resolvePtyProducerOptions(
  options: Omit<PtyProducerOptions, 'tasks'> = {},
): ResolvedPtyProducerOptions {
  const defaults = PTY_PRODUCER_DEFAULTS;
  const maxCols = integer('maxCols', options.maxCols, defaults.maxCols, MIN_COLS);
  const maxRows = integer('maxRows', options.maxRows, defaults.maxRows, MIN_ROWS);
  const maxSettleTimeoutMs = integer(
    'maxSettleTimeoutMs',
    options.maxSettleTimeoutMs,
    defaults.maxSettleTimeoutMs,
    1,
  );
  if (options.loadPty !== undefined && typeof options.loadPty !== 'function') {
    throw new InvalidArgumentError('loadPty', 'a function', options.loadPty);
  }
  validateLoggerOption(options.logger);
  if (options.outputRoot !== undefined) text('outputRoot', options.outputRoot, '');
  if (options.clock !== undefined && typeof options.clock?.schedule !== 'function') {
    throw new InvalidArgumentError('clock', 'an object with now and schedule functions', options.clock);
  }
  if (options.processSource !== undefined && typeof options.processSource?.read !== 'function') {
    throw new InvalidArgumentError('processSource', 'a process source', options.processSource);
  }
  return {
    shell: text('shell', options.shell, defaults.shell),
    shellArgs: strings('shellArgs', options.shellArgs, defaults.shellArgs),
    interactiveShellArgs: strings(
      'interactiveShellArgs',
      options.interactiveShellArgs,
      defaults.interactiveShellArgs,
    ),
    terminalName: text('terminalName', options.terminalName, defaults.terminalName),
    maxCols,
    maxRows,
    defaultCols: integer(
      'defaultCols',
      options.defaultCols,
      Math.min(defaults.defaultCols, maxCols),
      MIN_COLS,
      maxCols,
    ),
    defaultRows: integer(
      'defaultRows',
      options.defaultRows,
      Math.min(defaults.defaultRows, maxRows),
      MIN_ROWS,
      maxRows,
    ),
    scrollbackLines: integer(
      'scrollbackLines',
      options.scrollbackLines,
      defaults.scrollbackLines,
      0,
      1_000_000,
    ),
    maxScreenBytes: integer(
      'maxScreenBytes',
      options.maxScreenBytes,
      defaults.maxScreenBytes,
      256,
      MAX_SCREEN_BYTES,
    ),
    maxOutputFileBytes: integer(
      'maxOutputFileBytes',
      options.maxOutputFileBytes,
      defaults.maxOutputFileBytes,
      1,
    ),
    outputRoot: options.outputRoot,
    keepOutputFiles: flag('keepOutputFiles', options.keepOutputFiles, defaults.keepOutputFiles),
    flowControlHighWaterBytes: integer(
      'flowControlHighWaterBytes',
      options.flowControlHighWaterBytes,
      defaults.flowControlHighWaterBytes,
      4096,
      MAX_FLOW_CONTROL_HIGH_WATER_BYTES,
    ),
    interruptGraceMs: integer('interruptGraceMs', options.interruptGraceMs, defaults.interruptGraceMs, 0),
    killGraceMs: integer('killGraceMs', options.killGraceMs, defaults.killGraceMs, 0),
    runtimeCapMs:
      options.runtimeCapMs === undefined ? undefined : integer('runtimeCapMs', options.runtimeCapMs, 0, 1),
    maxInputBytes: integer('maxInputBytes', options.maxInputBytes, defaults.maxInputBytes, 1),
    maxCommandBytes: integer(
      'maxCommandBytes',
      options.maxCommandBytes,
      defaults.maxCommandBytes,
      1,
      MAX_COMMAND_BYTES,
    ),
    maxLabelChars: integer(
      'maxLabelChars',
      options.maxLabelChars,
      defaults.maxLabelChars,
      8,
      MAX_LABEL_LENGTH,
    ),
    settleQuietMs: integer('settleQuietMs', options.settleQuietMs, defaults.settleQuietMs, 1),
    settleTimeoutMs: integer(
      'settleTimeoutMs',
      options.settleTimeoutMs,
      Math.min(defaults.settleTimeoutMs, maxSettleTimeoutMs),
      1,
      maxSettleTimeoutMs,
    ),
    maxSettleTimeoutMs,
    detailIntervalMs: integer('detailIntervalMs', options.detailIntervalMs, defaults.detailIntervalMs, 0),
    retainFinishedScreens: integer(
      'retainFinishedScreens',
      options.retainFinishedScreens,
      defaults.retainFinishedScreens,
      0,
    ),
    inheritProcessEnv: flag('inheritProcessEnv', options.inheritProcessEnv, defaults.inheritProcessEnv),
    env: validateEnvironment('env', options.env),
    outputLimitBytes:
      options.outputLimitBytes === undefined
        ? undefined
        : integer('outputLimitBytes', options.outputLimitBytes, 0, 1),
    loadPty: options.loadPty,
    logger: options.logger ?? consoleLogger,
    clock: options.clock ?? systemClock,
    processSource: options.processSource ?? memoizedSource(procfsSource()),
    sandbox: options.sandbox === undefined ? undefined : resolveSandbox(options.sandbox, 'sandbox'),
  };
}
