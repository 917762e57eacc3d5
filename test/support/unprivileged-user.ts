/**
 * An unprivileged user for confinement tests, created for the test file when it runs as root
 * (`useradd`, no home, no login shell) and removed after (`userdel`); when `useradd` is missing, the
 * system's `nobody`. Not root: there is no second user to be, and the suites that need one are skipped.
 * `asUser(user, file, args)` is the command line that runs a program as that user (`setpriv`, util-linux).
 */
import { spawnSync } from 'node:child_process';

export interface TestUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  /** Removes the user if this helper created it. Idempotent. */
  remove(): void;
}

/** Whether this process is root (the only case in which another user can be made and become). */
export const runsAsRoot = process.getuid?.() === 0;

function idOf(name: string, flag: '-u' | '-g'): number | undefined {
  const result = spawnSync('id', [flag, name], { encoding: 'utf8' });
  return result.status === 0 ? Number(result.stdout.trim()) : undefined;
}

/** Creates the user (root only). Throws when neither `useradd` nor `nobody` gives one. */
export function createTestUser(): TestUser {
  if (!runsAsRoot) throw new Error('only root can create a user for the test');
  const name = `errand-t${process.pid}`;
  const created =
    spawnSync('useradd', ['-M', '-N', '-d', '/nonexistent', '-s', '/usr/sbin/nologin', name], {
      encoding: 'utf8',
    }).status === 0;
  const user = created ? name : 'nobody';
  const uid = idOf(user, '-u');
  const gid = idOf(user, '-g');
  if (uid === undefined || gid === undefined || uid === 0) {
    throw new Error(`no unprivileged user for the test (useradd ${created ? 'worked' : 'failed'})`);
  }
  let removed = !created;
  return {
    name: user,
    uid,
    gid,
    remove() {
      if (removed) return;
      removed = true;
      spawnSync('userdel', [name]);
    },
  };
}

/** `file args` run as `user`, with no supplementary groups and no capability (`setpriv`). */
export function asUser(
  user: TestUser,
  file: string,
  args: readonly string[],
): { file: string; args: string[] } {
  return {
    file: 'setpriv',
    args: [
      `--reuid=${user.uid}`,
      `--regid=${user.gid}`,
      '--clear-groups',
      '--inh-caps=-all',
      '--',
      file,
      ...args,
    ],
  };
}
