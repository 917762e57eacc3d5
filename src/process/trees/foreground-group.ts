/**
 * The foreground process group of a pseudo-terminal: the job a person stops with Ctrl-C. Read from the
 * session leader's /proc/<pid>/stat (field 8, `tpgid`), which the shared process table does not carry.
 */
import { readFileSync } from 'node:fs';

/** Parses field 8 (`tpgid`) of a /proc/<pid>/stat text; undefined when absent or not a group. */
export function parseForegroundGroup(statText: string): number | undefined {
  const close = statText.lastIndexOf(')');
  if (close < 0) return undefined;
  // After "pid (comm) ", fields[0] is field 3 (state); field 8 is fields[5].
  const tpgid = Number(statText.slice(close + 2).split(' ')[5]);
  return Number.isSafeInteger(tpgid) && tpgid > 1 ? tpgid : undefined;
}

/** The foreground process group of `pid`'s controlling terminal, or undefined (no /proc, no terminal). */
export function readForegroundGroup(pid: number, procRoot = '/proc'): number | undefined {
  try {
    return parseForegroundGroup(readFileSync(`${procRoot}/${pid}/stat`, 'latin1'));
  } catch {
    return undefined;
  }
}
