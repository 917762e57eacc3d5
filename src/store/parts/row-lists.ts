/**
 * What the parts do with lists of rows: the orders records are listed in (the same whichever backend
 * returned the rows) and the deletion retention ends with.
 */
import type { SessionRow, TaskRow } from '../rows.js';

/** Ascending; strings by UTF-16 code unit. */
export function compare(a: number | string, b: number | string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/** Oldest first: by creation time, then id. */
export function bySessionCreation(a: SessionRow, b: SessionRow): number {
  return compare(a.createdAt, b.createdAt) || compare(a.id, b.id);
}

/** Oldest start first: by start time, then session, then id. */
export function byTaskStart(a: TaskRow, b: TaskRow): number {
  return compare(a.startedAt, b.startedAt) || compare(a.scope, b.scope) || compare(a.id, b.id);
}

/** Deletes each row with `remove` (in the caller's write) and returns how many went. */
export function deleteEach<Row>(rows: readonly Row[], remove: (row: Row) => void): number {
  for (const row of rows) remove(row);
  return rows.length;
}
