/**
 * The stored form of each record, shared by every provider: the shape a SQLite row is selected into and
 * the shape the in-memory store keeps. Absent values are `null`, booleans are 0/1, JSON is text, so both
 * providers read records back through the same code.
 */

export interface SessionRow {
  id: string;
  schemaVersion: number;
  parentId: string | null;
  cwd: string;
  title: string | null;
  branchGeneration: number;
  state: string;
  /** The last message seq handed out (abandoned messages included), so seqs are never reused. */
  lastSeq: number;
  metadata: string;
  createdAt: number;
  updatedAt: number;
  /** JSON of the runtime that has the session open (`SessionHolder`), or null. */
  holder: string | null;
}

export interface MessageRow {
  sessionId: string;
  seq: number;
  schemaVersion: number;
  role: string;
  content: string;
  visibility: string;
  source: string;
  branchGeneration: number;
  createdAt: number;
  /** When a rewind abandoned the message; null while it is on the live branch. */
  abandonedAt: number | null;
}

export interface LedgerRow {
  id: number;
  sessionId: string;
  schemaVersion: number;
  kind: string;
  idempotencyKey: string;
  state: string;
  reason: string | null;
  priority: string;
  lane: string | null;
  branchGeneration: number;
  taskId: string | null;
  text: string;
  createdAt: number;
  updatedAt: number;
  deliveredInMessageSeq: number | null;
}

export interface TaskRow {
  /** The owning session's id, or '' for an ownerless task: with `id`, the record's key. */
  scope: string;
  id: string;
  sessionId: string | null;
  schemaVersion: number;
  kind: string;
  label: string;
  status: string;
  detail: string;
  isBackgrounded: number;
  branchGeneration: number;
  stopInitiator: string | null;
  startedAt: number;
  endedAt: number | null;
  reported: number;
  error: string | null;
  resultText: string | null;
  outputFile: string | null;
  traceparent: string | null;
  updatedAt: number;
  /** The process tree's root (also its group and session id when it leads them), or null. */
  pid: number | null;
  /** The root's start time in clock ticks after boot (/proc/<pid>/stat field 22), or null. */
  processStartTime: number | null;
  /** /proc/sys/kernel/random/boot_id when the root started, or null. */
  bootId: string | null;
  pgid: number | null;
  /** The tree's environment tag, `NAME=value`, or null. */
  processTag: string | null;
  /** Where the exit status is written by something that outlives the runtime, or null. */
  statusFile: string | null;
  durable: number;
  /** Bytes of the output the model has read. */
  readOffset: number;
}

export interface RunRow {
  runId: string;
  sessionId: string;
  schemaVersion: number;
  taskId: string;
  scriptPath: string;
  scriptHash: string;
  status: string;
  supersededBy: string | null;
  stopInitiator: string | null;
  input: string;
  result: string | null;
  error: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface StepRow {
  runId: string;
  name: string;
  seq: number;
  schemaVersion: number;
  state: string;
  result: string | null;
  error: string | null;
  startedAt: number;
  endedAt: number;
}

export interface CommandRow {
  id: number;
  sessionId: string;
  schemaVersion: number;
  runtime: string;
  type: string;
  workId: string;
  state: string;
  reason: string | null;
  createdAt: number;
  answeredAt: number | null;
}

export interface ScheduleRow {
  sessionId: string;
  /** The schedule's task id (`schedule-N`): with `sessionId`, the key. */
  id: string;
  schemaVersion: number;
  /** JSON of the definition as it was given. */
  definition: string;
  fired: number;
  lastDueAt: number | null;
  nextAt: number | null;
  /** The firing whose automated turn started and has not ended, or null. */
  firing: number | null;
  note: string | null;
  createdAt: number;
  updatedAt: number;
}

/** The scope part of a task record's key. */
export function taskScope(sessionId: string | null | undefined): string {
  return sessionId ?? '';
}
