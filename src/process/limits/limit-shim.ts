/**
 * The limit shim: a request rewriter, like `Sandbox.confine`, that starts a command as
 * `/bin/sh -c <script> errand-limits <cgroup.procs files> -- file args`. The shell writes its own pid into
 * each group's `cgroup.procs`, applies the `ulimit`s, and only then `exec`s the command: the command and
 * everything it forks are inside the groups from their first instruction, and nothing runs unlimited if a
 * step fails (the shell exits 125 instead, with a line on stderr). The pid stays the launch's: the same
 * process, group, session, tag and pipes, so the census, the terminator and any launcher are unchanged.
 * Applied outside a sandbox: `bwrap` itself runs inside the groups.
 */
import type { LaunchRequest } from '../launch/process-launcher.js';

/** The shell that runs the shim; POSIX `sh` is on every Linux host. */
export const SHIM_SHELL = '/bin/sh';

/** The exit code of a shim that could not join a group or set a limit (the command never ran). */
export const SHIM_FAILURE_EXIT_CODE = 125;

/** Per-process limits set with `ulimit` before the exec (the floor where no cgroup can be made). */
export interface ShimRlimits {
  /** RLIMIT_AS, in KiB (`ulimit -v`). */
  readonly addressSpaceKiB?: number;
  /** RLIMIT_CPU, in seconds: SIGXCPU at this, SIGKILL one second later (`ulimit -t`). */
  readonly cpuSeconds?: number;
  /** RLIMIT_NPROC (`ulimit -p`): processes of the user, counted across all of its processes. */
  readonly processes?: number;
}

export interface ShimSettings {
  /** The `cgroup.procs` files to join, in order (each hierarchy's). */
  readonly procsFiles: readonly string[];
  readonly rlimits?: ShimRlimits;
}

const FAIL = `exit ${SHIM_FAILURE_EXIT_CODE}`;

/** The shim's script: only integers from Errand's own validation are spliced in; paths are arguments. */
export function shimScript(rlimits: ShimRlimits = {}): string {
  const steps = [
    `while [ "$1" != -- ]; do echo $$ >"$1" || { echo "errand: cannot join the resource-limit group $1" >&2; ${FAIL}; }; shift; done; shift`,
  ];
  const limit = (flags: string, value: number) =>
    `ulimit ${flags} ${Math.floor(value)} || { echo "errand: cannot set ulimit ${flags} ${Math.floor(value)}" >&2; ${FAIL}; }`;
  if (rlimits.cpuSeconds !== undefined) {
    // The soft limit first: a hard limit below the current (unlimited) soft one is refused.
    steps.push(limit('-S -t', rlimits.cpuSeconds), limit('-H -t', rlimits.cpuSeconds + 1));
  }
  if (rlimits.addressSpaceKiB !== undefined) steps.push(limit('-v', rlimits.addressSpaceKiB));
  if (rlimits.processes !== undefined) steps.push(limit('-p', rlimits.processes));
  steps.push('exec "$@"');
  return steps.join('; ');
}

/** `request` started through the shim: same directory, environment, tag and watch. Pure: no I/O. */
export function wrapInLimitShim(request: LaunchRequest, settings: ShimSettings): LaunchRequest {
  return {
    ...request,
    file: SHIM_SHELL,
    args: [
      '-c',
      shimScript(settings.rlimits),
      'errand-limits',
      ...settings.procsFiles,
      '--',
      request.file,
      ...request.args,
    ],
  };
}
