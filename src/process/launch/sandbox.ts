/**
 * Sandbox profiles: what a command may touch, enforced by bubblewrap (`bwrap`). A profile is resolved
 * once (bwrap found on PATH, or a clear error naming the Debian package — never a silent fallback to no
 * confinement) and then applied as a pure rewrite of a `LaunchRequest`: the same request, started as
 * `bwrap <mounts> -- file args`. The process keeps its session, group, tag and pipes, so the census, the
 * terminator, the output caps and any launcher (a spawner process, a worker) work on it unchanged.
 */
import { resolve } from 'node:path';
import { ErrandError, InvalidArgumentError } from '../../tasks/errors.js';
import { option } from '../../tasks/options.js';
import type { LaunchRequest } from './process-launcher.js';
import { findOnPath, isExecutableFile } from './spawn-check.js';

/**
 * - `read-only`: the whole filesystem read-only, a private empty `/tmp`, a pid namespace of its own;
 * - `workspace-write`: the same, plus writes under the workspace (the session's working directory);
 * - `full`: the user's own rights (no filesystem confinement; with the network off it still runs in bwrap).
 */
export type SandboxProfile = 'read-only' | 'workspace-write' | 'full';

export const SANDBOX_PROFILES: readonly SandboxProfile[] = Object.freeze([
  'read-only',
  'workspace-write',
  'full',
]);

/** The Debian (and Ubuntu) package that ships `bwrap`. */
export const BUBBLEWRAP_PACKAGE = 'bubblewrap';

export interface SandboxOptions {
  readonly profile: SandboxProfile;
  /** Whether commands reach the network. False: a network namespace of their own (`--unshare-net`), with only a private loopback. Default true. */
  readonly network?: boolean;
  /** The bubblewrap program: a path, or a name looked up in `searchPath`. Default `bwrap`. */
  readonly bwrap?: string;
  /** Where a bare `bwrap` name is looked up. Default: this process's `PATH`. */
  readonly searchPath?: string;
}

/** A profile name, full options, or an already resolved sandbox. */
export type SandboxSetting = SandboxProfile | SandboxOptions | Sandbox;

/** The JSON facts a task's detail carries about its confinement. */
export interface SandboxFacts {
  readonly profile: SandboxProfile;
  readonly network: boolean;
}

const marker = Symbol.for('errand.sandbox');

export interface Sandbox {
  readonly [marker]: true;
  readonly profile: SandboxProfile;
  readonly network: boolean;
  /** Whether launches are rewritten at all (`full` with the network on is today's behaviour: no). */
  readonly confines: boolean;
  /** The absolute path of `bwrap`, when launches are rewritten. */
  readonly bwrapPath: string | undefined;
  /** For people and tool descriptions: `workspace-write, network off`. */
  readonly summary: string;
  readonly facts: SandboxFacts;
  /**
   * The request to launch instead: `bwrap <mounts> -- file args` in the same working directory, with the
   * same environment (plus `TMPDIR=/tmp` when `/tmp` is private) and the same tag. `workspace` is where
   * `workspace-write` allows writes (default: the request's working directory). Pure: no I/O.
   */
  confine(request: LaunchRequest, workspace?: string): LaunchRequest;
}

/** A profile needs bwrap and it cannot be found or run. Never a silent fallback. */
export class SandboxUnavailableError extends ErrandError {
  constructor(profile: SandboxProfile, network: boolean, problem: string) {
    const what = `${profile}${network ? '' : ', network off'}`;
    super(
      'SANDBOX_UNAVAILABLE',
      'system',
      `The sandbox (${what}) needs bubblewrap: ${problem}. Install Debian's \`${BUBBLEWRAP_PACKAGE}\` package (apt-get install ${BUBBLEWRAP_PACKAGE}), or choose the \`full\` profile with the network on to run commands unconfined`,
      { context: { profile, network, package: BUBBLEWRAP_PACKAGE } },
    );
  }
}

/** Whether `value` is a resolved sandbox (across package copies). */
export function isSandbox(value: unknown): value is Sandbox {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
}

/**
 * Resolves a setting: validates it (`field` names it in errors) and finds bwrap when the profile needs it.
 * Throws `INVALID_ARGUMENT` for a bad setting and `SANDBOX_UNAVAILABLE` when bwrap is missing.
 */
export function resolveSandbox(setting: SandboxSetting, field = 'sandbox'): Sandbox {
  if (isSandbox(setting)) return setting;
  const options: SandboxOptions =
    typeof setting === 'string' ? { profile: setting } : (setting as SandboxOptions);
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError(field, 'a sandbox profile name or { profile, network? }', setting);
  }
  const profile = options.profile;
  if (!SANDBOX_PROFILES.includes(profile)) {
    throw new InvalidArgumentError(
      typeof setting === 'string' ? field : `${field}.profile`,
      `one of ${SANDBOX_PROFILES.map((name) => `\`${name}\``).join(', ')}`,
      profile,
    );
  }
  const network = options.network ?? true;
  if (typeof network !== 'boolean') {
    throw new InvalidArgumentError(`${field}.network`, 'a boolean', options.network);
  }
  const program = options.bwrap ?? 'bwrap';
  if (typeof program !== 'string' || program === '' || program.includes('\0')) {
    throw new InvalidArgumentError(`${field}.bwrap`, 'a program name or path', options.bwrap);
  }
  if (options.searchPath !== undefined && typeof options.searchPath !== 'string') {
    throw new InvalidArgumentError(`${field}.searchPath`, 'a PATH string', options.searchPath);
  }
  const confines = profile !== 'full' || !network;
  const bwrapPath = confines
    ? findBubblewrap(profile, network, program, options.searchPath ?? process.env.PATH)
    : undefined;
  const facts: SandboxFacts = Object.freeze({ profile, network });
  return Object.freeze({
    [marker]: true as const,
    profile,
    network,
    confines,
    bwrapPath,
    summary: `${profile}, network ${network ? 'on' : 'off'}`,
    facts,
    confine: (request: LaunchRequest, workspace?: string) =>
      bwrapPath === undefined ? request : confineRequest(request, bwrapPath, facts, workspace),
  });
}

/**
 * The `sandbox` option of every part that launches commands: resolved (checked, bwrap found) when the
 * part's options are, so a bad profile or a missing bwrap fails before anything runs.
 */
export const sandboxOption = () =>
  option.custom<SandboxSetting, Sandbox>(
    'a sandbox profile name, { profile, network? } or a Sandbox',
    () => true,
    { convert: (value, path) => resolveSandbox(value, path) },
  );

/** `bwrap` as an absolute path: the given path, or the first executable match on `searchPath`. */
function findBubblewrap(
  profile: SandboxProfile,
  network: boolean,
  program: string,
  searchPath: string | undefined,
): string {
  if (program.includes('/')) {
    const path = resolve(program);
    if (!isExecutableFile(path)) {
      throw new SandboxUnavailableError(
        profile,
        network,
        `${JSON.stringify(path)} is not an executable file`,
      );
    }
    return path;
  }
  const found = findOnPath(program, searchPath ?? '', { absoluteOnly: true });
  if (found !== undefined) return found;
  throw new SandboxUnavailableError(
    profile,
    network,
    `\`${program}\` was not found on PATH (${JSON.stringify(searchPath ?? '')})`,
  );
}

/** Where a confined command's private temporary directory is. */
const PRIVATE_TMP = '/tmp';

function isUnder(path: string, directory: string): boolean {
  return path === directory || path.startsWith(directory.endsWith('/') ? directory : `${directory}/`);
}

/**
 * The bwrap command line. The confining profiles give the command a pid namespace of its own
 * (`--unshare-pid`, with its own `/proc`): it sees and signals only its own processes. The census is
 * unaffected: this process's /proc lists every member with the pids it knows, in the launch's session and
 * group, carrying the tree's tag. No `--new-session`: that would move the command out of the launch's
 * group. No `--die-with-parent`: bwrap itself dies on the group's SIGTERM, and the command must still get
 * its own grace.
 */
function confineRequest(
  request: LaunchRequest,
  bwrapPath: string,
  facts: SandboxFacts,
  workspace: string = request.cwd,
): LaunchRequest {
  const args: string[] = [];
  let env = request.env;
  if (facts.profile === 'full') {
    args.push('--bind', '/', '/');
  } else {
    args.push(
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--unshare-pid',
      '--proc',
      '/proc',
      '--tmpfs',
      PRIVATE_TMP,
    );
    // Mounted after the private /tmp, so a workspace or a working directory inside /tmp stays visible.
    if (facts.profile === 'workspace-write') args.push('--bind', workspace, workspace);
    const covered = facts.profile === 'workspace-write' && isUnder(request.cwd, workspace);
    if (!covered && isUnder(request.cwd, PRIVATE_TMP)) args.push('--ro-bind', request.cwd, request.cwd);
    // The host's TMPDIR is not there (or not writable) inside: temporary files go to the private /tmp.
    env = { ...request.env, TMPDIR: PRIVATE_TMP };
  }
  if (!facts.network) args.push('--unshare-net');
  args.push('--chdir', request.cwd, '--', request.file, ...request.args);
  return { ...request, file: bwrapPath, args, env };
}

/**
 * A task's sandbox as its detail records it (`detail.sandbox: { profile, network }`), in words:
 * `workspace-write, network off`. Undefined for a task that ran unconfined (no `sandbox` in its detail).
 */
export function sandboxSummaryOf(detail: object): string | undefined {
  const facts = (detail as { sandbox?: unknown }).sandbox as
    | { profile?: unknown; network?: unknown }
    | null
    | undefined;
  if (typeof facts !== 'object' || facts === null || typeof facts.profile !== 'string') return undefined;
  return `${facts.profile}, network ${facts.network === false ? 'off' : 'on'}`;
}
