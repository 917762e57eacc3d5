/** Task and session identifiers: branded strings, so a plain string cannot be passed where an id is meant. */

/** The kinds Errand ships; the union stays open so producers can add their own. */
export type KnownTaskKind = 'bash' | 'pty' | 'agent' | 'workflow' | 'monitor';
export type TaskKind = KnownTaskKind | (string & {});

declare const taskIdBrand: unique symbol;
declare const sessionIdBrand: unique symbol;

/** `<kind>-N`, one counter per kind. Ids are predictable: authorization, not secrecy, guards access. */
export type TaskId = string & { readonly [taskIdBrand]: true };
export type SessionId = string & { readonly [sessionIdBrand]: true };

const KIND_PATTERN = /^[a-z][a-z0-9_]{0,31}$/;
const TASK_ID_PATTERN = /^([a-z][a-z0-9_]{0,31})-([1-9][0-9]{0,15})$/;

export function isValidTaskKind(kind: unknown): kind is TaskKind {
  return typeof kind === 'string' && KIND_PATTERN.test(kind);
}

export function formatTaskId(kind: TaskKind, sequence: number): TaskId {
  return `${kind}-${sequence}` as TaskId;
}

/** Splits a well-formed id into its kind and sequence number; undefined for anything else. */
export function parseTaskId(value: unknown): { kind: TaskKind; sequence: number } | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TASK_ID_PATTERN.exec(value);
  if (!match) return undefined;
  const sequence = Number(match[2]);
  if (!Number.isSafeInteger(sequence)) return undefined;
  return { kind: match[1] as TaskKind, sequence };
}

export function isTaskId(value: unknown): value is TaskId {
  return parseTaskId(value) !== undefined;
}

/** Casts a string that is known to be an id (for example read back from storage). */
export function asTaskId(value: string): TaskId {
  return value as TaskId;
}

export function asSessionId(value: string): SessionId {
  return value as SessionId;
}
