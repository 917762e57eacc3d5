/**
 * Sandbox profiles: what a command may touch, enforced by bubblewrap (`bwrap`). A profile is resolved
 * once (bwrap found on PATH and its options read, or a clear error naming the Debian package — never a
 * silent fallback to no confinement) and then applied as a rewrite of a `LaunchRequest`: the same request,
 * started as `bwrap <mounts> -- file args`. The process keeps its session, group, tag and pipes, so the
 * census, the terminator, the output caps and any launcher (a spawner process, a worker) work on it
 * unchanged. Every confined command runs in a user namespace of its own with no capability at all (as
 * root too), and Errand's own files (`private-paths.ts`) are covered.
 */
import { resolve } from 'node:path';
import { ErrandError, InvalidArgumentError } from '../../tasks/errors.js';
import { option } from '../../tasks/options.js';
import { type BubblewrapFeatures, bubblewrapFeatures } from './bubblewrap-features.js';
import { type HiddenPath, hiddenPaths } from './private-paths.js';
import type { LaunchRequest } from './process-launcher.js';
import { SANDBOX_PROFILES, type SandboxProfile } from './sandbox-profiles.js';
import { findOnPath, isExecutableFile } from './spawn-check.js';

export { SANDBOX_PROFILES, type SandboxProfile } from './sandbox-profiles.js';

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
  /** What the program supports. Default: read once from its `--help`. */
  readonly features?: BubblewrapFeatures;
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
  /** What that bwrap supports (read from its `--help`), when launches are rewritten. */
  readonly features: BubblewrapFeatures | undefined;
  /** For people and tool descriptions: `workspace-write, network off`. */
  readonly summary: string;
  readonly facts: SandboxFacts;
  /**
   * The request to launch instead: `bwrap <mounts> -- file args` in the same working directory, with the
   * same environment (plus `TMPDIR=/tmp` when `/tmp` is private) and the same tag. `workspace` is where
   * `workspace-write` allows writes (default: the request's working directory). Its only I/O: which of
   * Errand's private paths exist now (they are covered).
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

/** The installed bwrap cannot take away every capability: too old to confine a command. */
export class SandboxTooOldError extends SandboxUnavailableError {}

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
  const features =
    bwrapPath === undefined ? undefined : checkFeatures(profile, network, bwrapPath, options.features);
  const facts: SandboxFacts = Object.freeze({ profile, network });
  return Object.freeze({
    [marker]: true as const,
    profile,
    network,
    confines,
    bwrapPath,
    features,
    summary: `${profile}, network ${network ? 'on' : 'off'}`,
    facts,
    confine: (request: LaunchRequest, workspace?: string) =>
      bwrapPath === undefined || features === undefined
        ? request
        : confineRequest(request, bwrapPath, features, facts, hiddenPaths(), workspace),
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

/** The program's features; one that cannot drop every capability is refused. */
function checkFeatures(
  profile: SandboxProfile,
  network: boolean,
  bwrapPath: string,
  given: BubblewrapFeatures | undefined,
): BubblewrapFeatures {
  const features = given ?? bubblewrapFeatures(bwrapPath);
  const missing = [
    ...(features.unshareUser ? [] : ['--unshare-user']),
    ...(features.capDrop ? [] : ['--cap-drop']),
  ];
  if (missing.length > 0) {
    throw new SandboxTooOldError(
      profile,
      network,
      `${JSON.stringify(bwrapPath)} has no ${missing.join(' and no ')} (bubblewrap 0.2 or later is needed; Debian 12 ships 0.8)`,
    );
  }
  return features;
}

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
 *
 * Every profile adds a user namespace of its own and drops every capability (`--unshare-user`,
 * `--cap-drop ALL`): started by root, bwrap would otherwise keep them all inside, and `mount -o
 * remount,rw /` would undo the profile. `--disable-userns` (bwrap 0.8) forbids namespaces inside it.
 * Then the private paths are covered, and a workspace or working directory inside one is bound again.
 */
function confineRequest(
  request: LaunchRequest,
  bwrapPath: string,
  features: BubblewrapFeatures,
  facts: SandboxFacts,
  hidden: readonly HiddenPath[],
  workspace: string = request.cwd,
): LaunchRequest {
  const args: string[] = [];
  let env = request.env;
  if (facts.profile === 'full') {
    // --dev-bind: a plain --bind mounts / (and so /dev) without devices, and /dev/null would fail.
    args.push('--dev-bind', '/', '/');
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
  args.push('--unshare-user');
  if (features.disableUserns) args.push('--disable-userns');
  args.push('--cap-drop', 'ALL');
  args.push(...coverPrivatePaths(request.cwd, workspace, facts.profile, hidden));
  if (!facts.network) args.push('--unshare-net');
  args.push('--chdir', request.cwd, '--', request.file, ...request.args);
  return { ...request, file: bwrapPath, args, env };
}

/**
 * The mounts that cover Errand's private paths: an empty tmpfs over a directory, `/dev/null` over a file.
 * A path in the private `/tmp` is out of sight already, unless a bind brought it back. A covered directory
 * that holds the workspace or the working directory is mounted first, then that one bound again (itself
 * only), then the rest, so a private path inside the workspace stays covered.
 */
function coverPrivatePaths(
  cwd: string,
  workspace: string,
  profile: SandboxProfile,
  hidden: readonly HiddenPath[],
): string[] {
  const writable = profile === 'workspace-write';
  const cwdBound = !(writable && isUnder(cwd, workspace));
  const bound = [...(writable ? [workspace] : []), ...(cwdBound ? [cwd] : [])];
  const exposedInTmp = bound.filter((path) => isUnder(path, PRIVATE_TMP));
  const visible = hidden.filter(
    ({ path }) =>
      path !== '/' &&
      !(
        profile !== 'full' &&
        isUnder(path, PRIVATE_TMP) &&
        !exposedInTmp.some((exposed) => isUnder(path, exposed))
      ),
  );
  const mount = ({ path, directory }: HiddenPath) =>
    directory ? ['--tmpfs', path] : ['--ro-bind', '/dev/null', path];
  const holds = ({ path, directory }: HiddenPath) =>
    directory && bound.some((target) => isUnder(target, path));
  const args = visible.filter(holds).flatMap(mount);
  const inside = (target: string) => visible.some((entry) => holds(entry) && isUnder(target, entry.path));
  if (writable && inside(workspace)) args.push('--bind', workspace, workspace);
  if (cwdBound && inside(cwd)) args.push(profile === 'full' ? '--bind' : '--ro-bind', cwd, cwd);
  args.push(...visible.filter((entry) => !holds(entry)).flatMap(mount));
  return args;
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
