/**
 * A small tmpfs for tests of a full or read-only data directory (mounting needs root). Without root a
 * suite that needs one is skipped with one line; under ERRAND_REQUIRE_EXTERNALS=1 it fails instead.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** True when this process may mount a tmpfs (it runs as root). */
export const CAN_MOUNT_TMPFS = process.getuid?.() === 0;

/**
 * Why a suite that mounts a tmpfs is skipped, or undefined when it can run. Throws under
 * ERRAND_REQUIRE_EXTERNALS=1, where a skipped requirement is a failure.
 */
export function tmpfsSkipReason(): string | undefined {
  if (CAN_MOUNT_TMPFS) return undefined;
  const reason = 'needs root to mount a tmpfs (mount -t tmpfs)';
  if (process.env.ERRAND_REQUIRE_EXTERNALS === '1') throw new Error(`required, but this process ${reason}`);
  return reason;
}

export interface Tmpfs {
  readonly path: string;
  /** Remounts it with `options` (`ro`, `rw`, `size=…`). */
  remount(options: string): void;
  /** Unmounts it and removes the mount point. Idempotent. */
  dispose(): void;
}

/** Mounts a tmpfs of `size` (e.g. `2m`) on a new directory, with `extra` mount options (e.g. `ro`). */
export function mountTmpfs(size: string, extra?: string): Tmpfs {
  const path = mkdtempSync(join(tmpdir(), 'errand-tmpfs-'));
  const options = [`size=${size}`, 'mode=0755', ...(extra ? [extra] : [])].join(',');
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', path]);
  let mounted = true;
  return {
    path,
    remount(next) {
      execFileSync('mount', ['-o', `remount,${next}`, path]);
    },
    dispose() {
      if (mounted) {
        mounted = false;
        execFileSync('umount', ['-l', path]);
      }
      rmSync(path, { recursive: true, force: true });
    },
  };
}
