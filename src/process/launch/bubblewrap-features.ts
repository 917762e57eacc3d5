/**
 * What the installed bubblewrap can do, read once per program from its `--help` (every bwrap since 0.1
 * prints its options there): whether it can drop every capability (`--cap-drop`, 0.2), give the sandbox a
 * user namespace of its own (`--unshare-user`) and forbid nested ones (`--disable-userns`, 0.8). The
 * sandbox needs the first two and uses the third where it exists.
 */
import { spawnSync } from 'node:child_process';

export interface BubblewrapFeatures {
  readonly unshareUser: boolean;
  readonly capDrop: boolean;
  readonly disableUserns: boolean;
}

const detected = new Map<string, BubblewrapFeatures>();

/** How long `bwrap --help` may take before the program counts as unusable. */
const HELP_TIMEOUT_MS = 5000;

/** The features of the bwrap at `path` (absolute), asked once per path in this process. */
export function bubblewrapFeatures(path: string): BubblewrapFeatures {
  const known = detected.get(path);
  if (known !== undefined) return known;
  const features = parseBubblewrapHelp(readHelp(path));
  detected.set(path, features);
  return features;
}

/** The features a `bwrap --help` text names (an option counts when a line starts with it). */
export function parseBubblewrapHelp(help: string): BubblewrapFeatures {
  const has = (flag: string) => new RegExp(`^\\s*${flag}(?:\\s|$)`, 'm').test(help);
  return Object.freeze({
    unshareUser: has('--unshare-user'),
    capDrop: has('--cap-drop'),
    disableUserns: has('--disable-userns'),
  });
}

function readHelp(path: string): string {
  const result = spawnSync(path, ['--help'], {
    encoding: 'utf8',
    timeout: HELP_TIMEOUT_MS,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
  });
  return `${result.stdout ?? ''}\n${result.stderr ?? ''}`;
}
