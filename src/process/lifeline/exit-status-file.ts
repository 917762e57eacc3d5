/**
 * The exit-status file of a process tree: one JSON line written atomically (a temporary file renamed over
 * the path) by something that outlives the runtime — the durable wrapper when its command exits
 * (`{"exitCode":N}`); the lifeline when it stops the tree because its runtime died
 * (`{"stoppedBy":"lifeline","at":T}`); a later runtime's start when it stops a tree a dead runtime left
 * running (`{"stoppedBy":"restart","at":T}`). A resume reads it to settle the task with the truth.
 */
import { closeSync, constants, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';

export type RecordedEnd =
  /** The command exited with this status, as its shell's `wait` reported it (128 + N: signal N). */
  | { readonly kind: 'exited'; readonly exitCode: number }
  /**
   * The tree was stopped at `at` (epoch ms) because its runtime was gone: by the lifeline as the runtime
   * died, or by a later runtime's start that found it still running.
   */
  | { readonly kind: 'stopped'; readonly by: 'lifeline' | 'restart'; readonly at: number };

/** The most a status file may hold; anything longer is not one. */
const MAX_STATUS_BYTES = 1024;

/** The recorded end, or undefined when the file is missing, unreadable or malformed. */
export function readStatusFile(path: string): RecordedEnd | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  if (text.length > MAX_STATUS_BYTES) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { exitCode, stoppedBy, at } = value as Record<string, unknown>;
  if (typeof exitCode === 'number' && Number.isSafeInteger(exitCode) && exitCode >= 0 && exitCode <= 255) {
    return { kind: 'exited', exitCode };
  }
  if (
    (stoppedBy === 'lifeline' || stoppedBy === 'restart') &&
    typeof at === 'number' &&
    Number.isSafeInteger(at)
  ) {
    return { kind: 'stopped', by: stoppedBy, at };
  }
  return undefined;
}

/** Writes `end` to `path` atomically (never through a link); false when it could not be written. */
export function writeStatusFile(path: string, end: RecordedEnd): boolean {
  const body =
    end.kind === 'exited'
      ? JSON.stringify({ exitCode: end.exitCode })
      : JSON.stringify({ stoppedBy: end.by, at: end.at });
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    const fd = openSync(
      temporary,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      writeSync(fd, `${body}\n`);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
    return true;
  } catch {
    try {
      unlinkSync(temporary);
    } catch {
      // Never created.
    }
    return false;
  }
}

/** The exit-status file beside an output file: `<name>.status` for `<name>.log`. */
export function statusFileBeside(outputPath: string): string {
  return `${outputPath.replace(/\.log$/, '')}.status`;
}

/**
 * The output file beside an exit-status file, `<name>.log` for `<name>.status`: where a record written
 * before its output file was stored finds the output. Undefined for a name `statusFileBeside` never gives.
 */
export function outputFileBeside(statusFile: string): string | undefined {
  return statusFile.endsWith('.status') ? `${statusFile.slice(0, -'.status'.length)}.log` : undefined;
}
