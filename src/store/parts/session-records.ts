/**
 * The sessions part of a store: creating, reading, listing and patching sessions, and the holder rule (one
 * runtime at a time has a session open). Every other part finds its session through `requireSession`.
 */
import { StoreRecordExistsError, StoreRecordNotFoundError } from '../errors.js';
import { readSession } from '../read-records.js';
import { SESSION_STATES, type SessionRecord } from '../records.js';
import type { SessionRow } from '../rows.js';
import type { SessionRecords } from '../session-store.js';
import type { StoreContext } from '../store-context.js';
import type { SessionTable, StoreTables } from '../store-tables.js';
import { applyAcquire, applyRelease, applySessionPatch } from '../transition-rules.js';
import {
  validateHolder,
  validateNewSession,
  validateObject,
  validateOneOf,
  validateSessionKey,
  validateSessionPatch,
} from '../validate-input.js';
import { bySessionCreation, compare, deleteEach } from './row-lists.js';

/** The session's row, or `STORE_RECORD_NOT_FOUND`. */
export function requireSession(sessions: SessionTable, id: string): SessionRow {
  const row = sessions.get(id);
  if (!row) throw new StoreRecordNotFoundError('session', id);
  return row;
}

/** `requireSession` for a write that needs only to know the session exists. */
export function requireSessionExists(sessions: SessionTable, id: string): void {
  if (!sessions.exists(id)) throw new StoreRecordNotFoundError('session', id);
}

/** Saves the row in the caller's write (over `previous`, the stored row it changes) and returns its record. */
function saveSession(sessions: SessionTable, row: SessionRow, previous?: SessionRow): SessionRecord {
  sessions.put(row, previous);
  return readSession(row);
}

export function createSessionRecords(context: StoreContext): SessionRecords {
  return {
    createSession(input) {
      const row = validateNewSession(input, context.now(), context.maxFieldBytes);
      return context.write('create a session', ({ sessions }) => {
        if (sessions.get(row.id)) throw new StoreRecordExistsError('session', row.id);
        if (row.parentId !== null) requireSession(sessions, row.parentId);
        return saveSession(sessions, row);
      });
    },

    getSession(id) {
      const key = validateSessionKey('id', id);
      return context.readOne('read a session', ({ sessions }) => sessions.get(key), readSession);
    },

    listSessions(filter = {}) {
      validateObject('filter', filter);
      const parentId = filter.parentId === undefined ? null : validateSessionKey('parentId', filter.parentId);
      const state = filter.state === undefined ? null : validateOneOf('state', filter.state, SESSION_STATES);
      return context.read('list sessions', ({ sessions }) =>
        sessions.select(parentId, state).sort(bySessionCreation).map(readSession),
      );
    },

    updateSession(id, patch) {
      const key = validateSessionKey('id', id);
      const normalized = validateSessionPatch(patch, context.maxFieldBytes);
      const time = context.now();
      return context.write('update a session', ({ sessions }) => {
        const stored = requireSession(sessions, key);
        return saveSession(sessions, applySessionPatch(stored, normalized, time), stored);
      });
    },

    acquireSession(id, holder, isLive) {
      const key = validateSessionKey('id', id);
      const valid = validateHolder(holder, isLive);
      // One transaction: of two processes acquiring at once, the second sees the first's holder.
      return context.write('acquire a session', ({ sessions }) => {
        const stored = requireSession(sessions, key);
        return saveSession(sessions, applyAcquire(stored, valid, isLive), stored);
      });
    },

    releaseSession(id, runtime) {
      const key = validateSessionKey('id', id);
      context.write('release a session', ({ sessions }) => {
        const row = sessions.get(key);
        const next = row === undefined ? undefined : applyRelease(row, runtime);
        if (next !== undefined) sessions.put(next, row);
      });
    },
  };
}

/** Closed sessions beyond the newest `keep` (by last change) go, with every record of theirs. */
export function pruneClosedSessions(tables: StoreTables, keep: number): number {
  const old = tables.sessions
    .select(null, 'closed')
    .sort((a, b) => compare(b.updatedAt, a.updatedAt) || compare(b.id, a.id))
    .slice(keep);
  return deleteEach(old, (row) => tables.sessions.delete(row.id));
}
