/**
 * The messages part of a store: the conversation, numbered per session, and the rewind that abandons its
 * tail and opens a new branch generation. `appendMessageRow` is shared with the ledger's delivery, so a
 * message is numbered and stamped by one rule however it arrives.
 */
import { InvalidArgumentError } from '../../tasks/index.js';
import { StoreStaleBranchError } from '../errors.js';
import { readMessage, readSession } from '../read-records.js';
import { RECORD_SCHEMA_VERSION } from '../records.js';
import type { MessageRow, SessionRow } from '../rows.js';
import type { MessageLog } from '../session-store.js';
import type { StoreContext } from '../store-context.js';
import type { StoreTables } from '../store-tables.js';
import {
  type NormalizedMessage,
  validateCount,
  validateNewMessage,
  validateObject,
  validateSessionKey,
} from '../validate-input.js';
import { deleteEach } from './row-lists.js';
import { requireSession } from './session-records.js';

/**
 * Appends inside the caller's write: the next seq, the session's generation, the session touched. A
 * message that names a generation other than the session's fails with `STORE_STALE_BRANCH`.
 */
export function appendMessageRow(
  tables: StoreTables,
  session: SessionRow,
  message: NormalizedMessage,
  time: number,
): MessageRow {
  if (message.expectedGeneration !== undefined && message.expectedGeneration !== session.branchGeneration) {
    throw new StoreStaleBranchError(session.id, message.expectedGeneration, session.branchGeneration);
  }
  const seq = session.lastSeq + 1;
  tables.sessions.put({ ...session, lastSeq: seq, updatedAt: time }, session);
  const row: MessageRow = {
    sessionId: session.id,
    seq,
    schemaVersion: RECORD_SCHEMA_VERSION,
    role: message.role,
    content: message.content,
    visibility: message.visibility,
    source: message.source,
    branchGeneration: session.branchGeneration,
    createdAt: time,
    abandonedAt: null,
  };
  tables.messages.put(row);
  return row;
}

export function createMessageLog(context: StoreContext): MessageLog {
  return {
    appendMessage(sessionId, message) {
      const key = validateSessionKey('sessionId', sessionId);
      const normalized = validateNewMessage(message, context.maxFieldBytes);
      const time = context.now();
      return context.write('append a message', (tables) =>
        readMessage(appendMessageRow(tables, requireSession(tables.sessions, key), normalized, time)),
      );
    },

    listMessages(sessionId, options = {}) {
      const key = validateSessionKey('sessionId', sessionId);
      validateObject('options', options);
      const afterSeq = options.afterSeq === undefined ? 0 : validateCount('afterSeq', options.afterSeq);
      const limit = options.limit === undefined ? undefined : validateCount('limit', options.limit);
      if (options.includeAbandoned !== undefined && typeof options.includeAbandoned !== 'boolean') {
        throw new InvalidArgumentError('includeAbandoned', 'a boolean', options.includeAbandoned);
      }
      const includeAbandoned = options.includeAbandoned === true;
      const beforeSeq =
        options.beforeSeq === undefined ? undefined : validateCount('beforeSeq', options.beforeSeq);
      return context.read('list messages', ({ messages }) =>
        messages.select(key, afterSeq, includeAbandoned, limit, beforeSeq).map(readMessage),
      );
    },

    rewind(sessionId, toSeq) {
      const key = validateSessionKey('sessionId', sessionId);
      const seq = validateCount('toSeq', toSeq);
      const time = context.now();
      return context.write('rewind a session', ({ sessions, messages }) => {
        const session = requireSession(sessions, key);
        if (seq > session.lastSeq) {
          throw new InvalidArgumentError(
            'toSeq',
            `a seq no greater than ${session.lastSeq}, the session's last`,
            seq,
          );
        }
        const live = messages.select(key, seq, false, undefined);
        const abandoned = live.map((row): MessageRow => ({ ...row, abandonedAt: time }));
        abandoned.forEach((row, index) => {
          messages.put(row, live[index]);
        });
        const next: SessionRow = {
          ...session,
          branchGeneration: session.branchGeneration + 1,
          updatedAt: time,
        };
        sessions.put(next, session);
        return { session: readSession(next), abandoned: abandoned.map(readMessage) };
      });
    },
  };
}

/** Abandoned messages older than `cutoff` go, unless a ledger entry records its delivery in them. */
export function pruneAbandonedMessages(tables: StoreTables, cutoff: number): number {
  const old = tables.messages
    .selectAbandonedBefore(cutoff)
    .filter((row) => !tables.ledger.referencesMessage(row.sessionId, row.seq));
  return deleteEach(old, (row) => tables.messages.delete(row.sessionId, row.seq));
}
