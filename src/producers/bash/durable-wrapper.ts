/**
 * The wrapper a durable command runs in: a POSIX shell that is the tree's root (the leader of its own
 * session and process group), runs the command with its output appended straight to the output file (it
 * never passes through the runtime, so it survives the runtime's death), waits for it, and writes its exit
 * status atomically to the status file before exiting with the same status. A SIGTERM (or hangup, or
 * interrupt) to the group reaches the command; the wrapper's trap only defers its own reaction until the
 * command ended, and once it did the wrapper ignores them (its `mv` with it), so the status of a stopped
 * command is still recorded. Only SIGKILL keeps it from writing.
 *
 * It trusts no name in its directory it did not just create: the output file was created exclusively by
 * the runtime and is opened before the command runs; the temporary status file is removed and then
 * created with `O_EXCL` (`set -C`), which never follows a link, and renamed over the status file (a
 * rename replaces a link, never writes through it). A confined command cannot reach the directory at
 * all (it is covered in every sandbox, and refused inside a writable workspace).
 */
import type { EnvironmentTag, LaunchRequest, Sandbox } from '../../process/index.js';

/**
 * The script, run as `sh -c <script> errand-durable <status file> <output file> <program> <args...>`: the
 * program is `<shell> -c <command>`, or bwrap around it when the command is confined (the wrapper stays
 * outside the sandbox, so it can write the output and status files the sandbox may not see).
 */
export const DURABLE_WRAPPER_SCRIPT = [
  'status=$1 output=$2',
  'shift 2',
  'exec </dev/null >>"$output" 2>&1',
  // A handler, not SIG_IGN: the command starts with default dispositions, and the wrapper outlives it.
  "trap ': stopping' HUP INT TERM",
  '"$@"',
  'code=$?',
  // Ignored from here on, and so in `mv` too: a stop that is still signalling the group (it signals
  // members it finds late) must not kill the rename and lose the status.
  "trap '' HUP INT TERM",
  // noclobber: `>` opens with O_CREAT | O_EXCL, so a link planted under the temporary name is refused.
  'rm -f "$status.tmp"',
  'set -C',
  'printf \'{"exitCode":%d}\\n\' "$code" >"$status.tmp" && mv -f "$status.tmp" "$status"',
  'exit "$code"',
].join('\n');

/** The shell the wrapper runs in. */
export const DURABLE_WRAPPER_SHELL = '/bin/sh';

export interface DurableLaunch {
  readonly shell: string;
  readonly command: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly tag: EnvironmentTag | undefined;
  readonly outputFile: string;
  readonly statusFile: string;
  /** The sandbox the command runs in (the wrapper itself is not confined). Default: none. */
  readonly sandbox?: Sandbox | undefined;
  /** Where `workspace-write` allows writes. Default: `cwd`. */
  readonly workspace?: string | undefined;
}

/** The launch request that runs `launch.command` durably (confined by `launch.sandbox` when given). */
export function durableLaunchRequest(launch: DurableLaunch): LaunchRequest {
  const command: LaunchRequest = {
    file: launch.shell,
    args: ['-c', launch.command],
    cwd: launch.cwd,
    env: launch.env,
    tag: launch.tag,
  };
  const program = launch.sandbox?.confine(command, launch.workspace) ?? command;
  return {
    file: DURABLE_WRAPPER_SHELL,
    args: [
      '-c',
      DURABLE_WRAPPER_SCRIPT,
      'errand-durable',
      launch.statusFile,
      launch.outputFile,
      program.file,
      ...program.args,
    ],
    cwd: launch.cwd,
    env: program.env,
    tag: launch.tag,
  };
}
