/** Options of the bash executor: one declaration with their documented defaults and their validation. */
import { tmpdir } from 'node:os';
import {
  createSpawnLauncher,
  isLifelineLink,
  type LifelineLink,
  memoizedSource,
  type ProcessLauncher,
  type ProcessSource,
  procfsSource,
  resourceLimitsOption,
  type SendSignal,
  type Spawner,
  sandboxOption,
} from '../../process/index.js';
import { systemClock } from '../../tasks/clock.js';
import { InvalidArgumentError } from '../../tasks/index.js';
import { createConsoleLogger } from '../../tasks/logger.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../../tasks/options.js';

/** The largest non-consuming snapshot a UI may read, in bytes. */
export const OUTPUT_SNAPSHOT_BYTES = 8192;

/** The environment variable that tags every process of a command (finds escaped daemons). */
export const PROCESS_TAG_VARIABLE = 'ERRAND_PROCESS_TAG';

const bashConsoleLogger = createConsoleLogger('errand:bash');

/** The options of `new BashExecutor()`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const bashExecutorOptions = defineOptions(
  'BashExecutor',
  {
    /** The shell, run as `<shell> -c <command>`. A bare name is looked up in the command's PATH. Default `bash`. */
    shell: option.string({ withoutNul: true, default: 'bash' }),
    /** Where the private output directory is created (mkdtemp, mode 0700). Default `os.tmpdir()`. */
    outputDirectoryParent: option.string({ withoutNul: true, fallback: tmpdir }),
    /** Output kept in memory per command (the newest bytes). Default 1 MiB; at least 8192. */
    maxBufferedBytes: option.integer({ min: OUTPUT_SNAPSHOT_BYTES, default: 1024 * 1024 }),
    /**
     * The most one consuming read returns; also what is kept in memory after a command stops. Default
     * 64 KiB (at most `maxBufferedBytes`).
     */
    maxReadBytes: option.integer({ min: 1, default: 64 * 1024, atMost: 'maxBufferedBytes' }),
    /** The output file's cap; a command that writes more is killed with reason `output_limit`. Default 1 GiB. */
    maxOutputFileBytes: option.integer({ min: 1, default: 1024 * 1024 * 1024 }),
    /** Output queued for the disk before the command's pipes are paused (they resume at a quarter). Default 4 MiB. */
    spillHighWaterMarkBytes: option.integer({ min: 1024, default: 4 * 1024 * 1024 }),
    /** Time between SIGTERM and SIGKILL, and again for killed processes to vanish. Default 2000 ms. */
    killGraceMs: option.integer({ min: 1, default: 2000 }),
    /** After the shell exits, how long to wait for its pipes to close before acting on holders. Default 100 ms. */
    exitGraceMs: option.integer({ min: 0, default: 100 }),
    /**
     * Whether processes the shell leaves behind when it exits (background jobs, daemons, anything holding
     * its pipes) are terminated. Default true: a command that reports "completed" while its children run
     * on is a leak (orphans holding ports). Set false to let them live; their output is then no longer read.
     */
    killProcessGroupOnExit: option.boolean({ default: true }),
    /**
     * Whether every command gets `ERRAND_PROCESS_TAG=<random>` in its environment so descendants that left
     * its session (setsid, double fork) are still found and stopped. Default true.
     */
    tagEnvironment: option.boolean({ default: true }),
    /** Keep the output directory when the executor is disposed. Default false (it is removed). */
    keepOutputFiles: option.boolean({ default: false }),
    /** Times deadlines and graces. Default: the system clock. */
    clock: option.clock({ default: systemClock }),
    /**
     * Starts a process the way `child_process.spawn` does, for the default launcher; injectable to count
     * or fail spawns in tests. Default `child_process.spawn`. Not together with `launcher`.
     */
    spawn: option.func<Spawner>(),
    /**
     * How commands are started: in their own session and process group, with the tag in their environment,
     * stdin on /dev/null and stdout and stderr piped. Default: `spawn` from this process.
     */
    launcher: option.shaped<ProcessLauncher>('an object with a launch function', ['launch']),
    /**
     * The sandbox every command runs in unless its request names another: a profile (`read-only`,
     * `workspace-write`, `full`), `{ profile, network }`, or a resolved `Sandbox`. Enforced by bubblewrap;
     * when a profile needs it and `bwrap` is missing, the executor is not created (`SANDBOX_UNAVAILABLE`,
     * naming Debian's `bubblewrap` package). Default: none (commands run with the user's own rights).
     */
    sandbox: sandboxOption(),
    /**
     * Resource limits of every non-durable command: `{ task, session, mechanism, cgroupRoot, pollMs }`
     * (`task` and `session` each `{ memoryBytes, cpuTimeMs, cpus, pids }`, every key optional; `session` is
     * the total of the commands of one `limitGroup`), or a `ResourceLimiter` shared with other parts.
     * Enforced with cgroup v2, else cgroup v1, else `setrlimit` (see docs/limits.md); a command past a
     * limit is stopped with reason `memory_limit`, `cpu_limit` or `pids_limit`. Default: none.
     */
    resourceLimits: resourceLimitsOption(),
    /**
     * Where the process table is read from (memoized for 2 ms: trees stopped together share reads).
     * Default /proc.
     */
    processSource: option.custom<ProcessSource, ProcessSource>('a process source', isProcessSource, {
      fallback: () => memoizedSource(procfsSource()),
      convert: (source) => memoizedSource(source),
    }),
    /** Sends a signal to a pid (negative: a process group). Default `process.kill`. */
    sendSignal: option.func<SendSignal>(),
    /**
     * The runtime's lifeline: every non-durable command's processes carry its tag and each tree is told to
     * it, so they are stopped within moments if the runtime dies, SIGKILL included. Default: none (a
     * standalone executor; `createErrandRuntime` gives its own).
     */
    lifeline: option.custom<LifelineLink>('a Lifeline (tag and watch)', isLifelineLink),
    /**
     * How often a durable command's output file, exit-status file and process are looked at, in ms (10 to
     * 60000). Reads (`task_output`, snapshots) look at once; this bounds how late progress and the end are
     * noticed. Default 250.
     */
    durablePollMs: option.integer({ min: 10, max: 60_000, default: 250 }),
    /** Told about failures no caller sees. Default: the console logger of `errand:bash`. */
    logger: option.logger({ default: bashConsoleLogger }),
  },
  {
    check({ spawn, launcher }, path) {
      if (spawn !== undefined && launcher !== undefined) {
        const expected = 'absent when `spawn` is given (the launcher spawns)';
        throw new InvalidArgumentError(path('launcher'), expected, launcher);
      }
    },
  },
);

/** Options of `new BashExecutor()`. */
export type BashExecutorOptions = OptionsInput<typeof bashExecutorOptions.rules>;

/** The executor's options, defaults filled in and the launcher made from `spawn` when none was given. */
export type ResolvedExecutorOptions = Omit<
  ResolvedOptions<typeof bashExecutorOptions.rules>,
  'spawn' | 'launcher'
> & { readonly launcher: ProcessLauncher };

/** The fixed defaults of `BashExecutorOptions`. */
export const BASH_EXECUTOR_DEFAULTS = bashExecutorOptions.defaults;

function isProcessSource(value: unknown): boolean {
  return typeof (value as Partial<ProcessSource> | null)?.read === 'function';
}

export function resolveExecutorOptions(options: BashExecutorOptions = {}): ResolvedExecutorOptions {
  const { spawn, launcher, ...resolved } = bashExecutorOptions.resolve(options);
  return Object.freeze({ ...resolved, launcher: launcher ?? createSpawnLauncher(spawn) });
}
