/** Options of the pty producer: one declaration with their documented defaults and their validation. */

import {
  isLifelineLink,
  type LifelineLink,
  memoizedSource,
  type ProcessSource,
  procfsSource,
  resourceLimitsOption,
  sandboxOption,
} from '../../process/index.js';
import { MAX_LABEL_LENGTH } from '../../registry/validate-spec.js';
import { systemClock } from '../../tasks/clock.js';
import { consoleLogger, type TaskService } from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../../tasks/options.js';
import type { PtyModuleLoader } from './pty-runtime.js';

export const MAX_SCREEN_BYTES = 8192;
export const MIN_COLS = 10;
export const MIN_ROWS = 2;
/** The longest single argument Linux passes to a program (MAX_ARG_STRLEN, 128 KiB, less its NUL). */
const MAX_COMMAND_BYTES = 131_071;
/** The most bytes waiting to be written or rendered that `flowControlHighWaterBytes` may allow. */
const MAX_FLOW_CONTROL_HIGH_WATER_BYTES = 64 * 1024 ** 2;

const isVariableName = (name: string) => name !== '' && !name.includes('=') && !name.includes('\0');

/** An environment: names without `=` or NUL, string values without NUL. */
const environment = option.record(option.string({ nonEmpty: false, withoutNul: true }), {
  keys: { expected: 'names without "=" or NUL', isValid: isVariableName },
});

const isProcessSource = (value: unknown) =>
  typeof (value as Partial<ProcessSource> | null)?.read === 'function';

/**
 * The options of `createPtyProducer`. A key not declared here is rejected with `UNKNOWN_OPTION`; the old
 * names `maxRuntimeMs` and `terminateGraceMs` are answered with their new ones, `runtimeCapMs` and
 * `killGraceMs`.
 */
export const ptyProducerOptions = defineOptions(
  'createPtyProducer',
  {
    /** The task service the producer registers its `pty` tasks with and authorizes every access through. */
    tasks: option.required(option.shaped<TaskService>('a TaskService', ['start'])),
    /** The shell that runs a command line. Default `bash`. */
    shell: option.string({ withoutNul: true, default: 'bash' }),
    /** Arguments placed before the command line. Default `['-c']`. */
    shellArgs: option.list(option.string({ nonEmpty: false, withoutNul: true }), { default: ['-c'] }),
    /** Arguments that start the shell interactively when a task has no command. Default `['-i']`. */
    interactiveShellArgs: option.list(option.string({ nonEmpty: false, withoutNul: true }), {
      default: ['-i'],
    }),
    /** `TERM` for the program; the renderer emulates xterm. Default `xterm-256color`. */
    terminalName: option.string({ withoutNul: true, default: 'xterm-256color' }),
    /** Columns of a terminal when the caller gives none. Default 120 (at most `maxCols`). */
    defaultCols: option.integer({ min: MIN_COLS, default: 120, atMost: 'maxCols' }),
    /** Rows of a terminal when the caller gives none. Default 40 (at most `maxRows`). */
    defaultRows: option.integer({ min: MIN_ROWS, default: 40, atMost: 'maxRows' }),
    /** Largest accepted width (the smallest is 10). Default 500 columns. */
    maxCols: option.integer({ min: MIN_COLS, default: 500 }),
    /** Largest accepted height (the smallest is 2). Default 200 rows. */
    maxRows: option.integer({ min: MIN_ROWS, default: 200 }),
    /** Rendered lines kept above the screen, the in-memory bound of a task's output. Default 1000. */
    scrollbackLines: option.integer({ min: 0, max: 1_000_000, default: 1000 }),
    /** Budget of a screen snapshot, in UTF-8 bytes (at most 8192). Default 8192. */
    maxScreenBytes: option.integer({ min: 256, max: MAX_SCREEN_BYTES, default: MAX_SCREEN_BYTES }),
    /** Cap of a task's raw output file; past it the program is stopped (`output_limit`). Default 1 GiB. */
    maxOutputFileBytes: option.integer({ min: 1, default: 1024 ** 3 }),
    /** Where the private per-runtime output directory is created. Default `os.tmpdir()`. */
    outputRoot: option.string({ withoutNul: true }),
    /** Keep the output directory when the producer is disposed. Default false (it is removed). */
    keepOutputFiles: option.boolean({ default: false }),
    /**
     * Unwritten plus unrendered bytes above which the terminal is paused (back-pressure). 4096 to 64 MiB.
     * Default 1 MiB.
     */
    flowControlHighWaterBytes: option.integer({
      min: 4096,
      max: MAX_FLOW_CONTROL_HIGH_WATER_BYTES,
      default: 1024 ** 2,
    }),
    /** After the interrupt (SIGINT to the foreground job), how long to wait before SIGTERM. Default 1000 ms. */
    interruptGraceMs: option.integer({ min: 0, default: 1000 }),
    /**
     * After SIGTERM, how long to wait before SIGKILL, and again for killed processes to disappear. Processes
     * a program leaves behind when it exits get the same SIGTERM, grace, SIGKILL. Named like the bash
     * executor's grace. Default 2000 ms.
     */
    killGraceMs: option.integer({ min: 0, default: 2000 }),
    /**
     * Runtime cap of a task; past it the program is stopped (`timed_out`). A request's `timeoutMs` overrides
     * it. Default none.
     */
    runtimeCapMs: option.integer({ min: 1 }),
    /** Largest input one write accepts, in UTF-8 bytes. Default 65536. */
    maxInputBytes: option.integer({ min: 1, default: 65536 }),
    /**
     * Longest command line `start` accepts, in UTF-8 bytes; a longer one is refused. 1 to 131071 (Linux
     * passes no longer argument to a program). Default 100000.
     */
    maxCommandBytes: option.integer({ min: 1, max: MAX_COMMAND_BYTES, default: 100_000 }),
    /**
     * A task's label (its description, else its command, on one line) is shortened to this many characters.
     * 8 to 2000 (the longest label the task service accepts). Default 200.
     */
    maxLabelChars: option.integer({ min: 8, max: MAX_LABEL_LENGTH, default: 200 }),
    /** `pty_write` returns once the screen has been quiet this long after the input. Default 150 ms. */
    settleQuietMs: option.integer({ min: 1, default: 150 }),
    /** `pty_write`'s default bound on that wait (and on `wait_for`). Default 2000 ms (at most `maxSettleTimeoutMs`). */
    settleTimeoutMs: option.integer({ min: 1, default: 2000, atMost: 'maxSettleTimeoutMs' }),
    /** The largest `timeout_ms` a `pty_write` call may ask for. Default 30000 ms. */
    maxSettleTimeoutMs: option.integer({ min: 1, default: 30_000 }),
    /** The shortest interval between `outputBytes` updates of a running task's detail. Default 250 ms. */
    detailIntervalMs: option.integer({ min: 0, default: 250 }),
    /** Finished tasks whose final screen stays readable through `screen()`. Default 100. */
    retainFinishedScreens: option.integer({ min: 0, default: 100 }),
    /** Pass this process's environment to programs (under the session's). Default true. */
    inheritProcessEnv: option.boolean({ default: true }),
    /** Environment for every program, over the inherited one and under the session's. Default none. */
    env: environment,
    /** The task's presentation budget for model-facing text (`outputLimitBytes`). Default: the controller's. */
    outputLimitBytes: option.integer({ min: 1 }),
    /** Loads node-pty. Default: a dynamic import of the optional dependency. */
    loadPty: option.func<PtyModuleLoader>(),
    /** Told about failures no caller sees. Default: the console logger. */
    logger: option.logger({ default: consoleLogger }),
    /** Schedules the stop steps, runtime caps and screen waits. Default: the system clock. */
    clock: option.clock({ default: systemClock }),
    /** Where processes are looked up (the stop census). Default: /proc, memoized per event-loop turn. */
    processSource: option.custom<ProcessSource>('a process source', isProcessSource, {
      fallback: () => memoizedSource(procfsSource()),
    }),
    /**
     * The runtime's lifeline: every program's processes carry its tag and each tree is told to it, so they
     * are stopped within moments if the runtime dies. Default: none (`createErrandRuntime` gives its own).
     */
    lifeline: option.custom<LifelineLink>('a Lifeline (tag and watch)', isLifelineLink),
    /**
     * The sandbox every program runs in unless its request names another: a profile (`read-only`,
     * `workspace-write`, `full`), `{ profile, network }`, or a `Sandbox`, enforced by bubblewrap. When a
     * profile needs bwrap and it is missing, the producer is not created (`SANDBOX_UNAVAILABLE`). Default:
     * none.
     */
    sandbox: sandboxOption(),
    /**
     * Resource limits of every program (`{ task, session, mechanism, cgroupRoot, pollMs }`, as the bash
     * executor's), or a `ResourceLimiter` shared with other parts; a program past a limit is stopped with
     * reason `memory_limit`, `cpu_limit` or `pids_limit`. Default: none.
     */
    resourceLimits: resourceLimitsOption(),
  },
  { renamed: { maxRuntimeMs: 'runtimeCapMs', terminateGraceMs: 'killGraceMs' } },
);

/** Options of `createPtyProducer`. */
export type PtyProducerOptions = OptionsInput<typeof ptyProducerOptions.rules>;

/** Every option but the task service, checked and with its default applied. */
const ptySettings = ptyProducerOptions.omit('tasks');
export type ResolvedPtyProducerOptions = ResolvedOptions<typeof ptySettings.rules>;

/** The fixed defaults of `PtyProducerOptions`. */
export const PTY_PRODUCER_DEFAULTS = ptyProducerOptions.defaults;

/** Validates an environment record: string keys without `=` or NUL, string values without NUL. */
export function validateEnvironment(field: string, value: unknown): Readonly<Record<string, string>> {
  return (value === undefined ? {} : environment.resolve(value, field, 'start')) as Readonly<
    Record<string, string>
  >;
}

export function resolvePtyProducerOptions(
  options: Omit<PtyProducerOptions, 'tasks'> = {},
): ResolvedPtyProducerOptions {
  return ptySettings.resolve(options);
}
