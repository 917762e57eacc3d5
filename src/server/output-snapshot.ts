/**
 * Finds a work's output snapshot: asks the work's own session, then each parent up the chain, and
 * never loads a runtime to do it (the backend answers only from live runtimes). The answer is cut to
 * the byte budget on a character boundary, keeping the end.
 */
import { takeUtf8Tail } from '../events/index.js';
import type { DashboardBackend } from './dashboard-backend.js';
import { DashboardRequestError } from './http-response.js';

export interface WorkOutputSnapshot {
  readonly workId: string;
  /** The session whose runtime answered (the work's own session or an ancestor). */
  readonly sessionId: string;
  readonly text: string;
  /** UTF-8 bytes of `text` (at most the budget). */
  readonly bytes: number;
  /** Every byte the work produced, when known. */
  readonly totalBytes: number | null;
  /** True when `text` is not the whole output. */
  readonly truncated: boolean;
}

export interface FindOutputOptions {
  readonly backend: DashboardBackend;
  readonly maxBytes: number;
  readonly maxParentDepth: number;
}

export async function findOutputSnapshot(
  workId: string,
  options: FindOutputOptions,
): Promise<WorkOutputSnapshot> {
  const { backend, maxBytes } = options;
  const facts = backend.events.find(workId);
  if (facts === undefined) {
    throw new DashboardRequestError(
      404,
      'WORK_NOT_FOUND',
      `No background work with id ${JSON.stringify(workId)}`,
    );
  }
  const visited = new Set<string>();
  let sessionId: string | undefined = facts.sessionId ?? undefined;
  for (let depth = 0; sessionId !== undefined && depth <= options.maxParentDepth; depth += 1) {
    if (visited.has(sessionId)) break;
    visited.add(sessionId);
    const snapshot = await backend.outputSnapshot(sessionId, workId, maxBytes);
    if (snapshot !== undefined) {
      const { text, skippedBytes } = takeUtf8Tail(String(snapshot.text), maxBytes);
      const bytes = Buffer.byteLength(text);
      const totalBytes =
        typeof snapshot.totalBytes === 'number' && Number.isSafeInteger(snapshot.totalBytes)
          ? snapshot.totalBytes
          : null;
      return {
        workId,
        sessionId,
        text,
        bytes,
        totalBytes,
        truncated: skippedBytes > 0 || (totalBytes !== null && totalBytes > bytes),
      };
    }
    sessionId = (await backend.getSession(sessionId))?.parentId;
  }
  throw new DashboardRequestError(
    404,
    'OUTPUT_UNAVAILABLE',
    `No live runtime holds the output of ${JSON.stringify(workId)}`,
  );
}
