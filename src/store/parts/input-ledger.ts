/**
 * The input ledger part of a store: what was queued for a session's model (notifications, user input),
 * admitted once per idempotency key, and settled once — delivered in exactly one message or discarded.
 * A delivery appends its message and settles its entries in one transaction.
 */
import { StoreRecordNotFoundError } from '../errors.js';
import { readLedgerEntry, readMessage } from '../read-records.js';
import { LEDGER_PRIORITIES, type LedgerEntry, RECORD_SCHEMA_VERSION } from '../records.js';
import type { LedgerRow } from '../rows.js';
import type { DeliveryResult, InputLedger } from '../session-store.js';
import type { StoreContext } from '../store-context.js';
import type { LedgerTable, StoreTables } from '../store-tables.js';
import { findDeliveryConflicts } from '../transition-rules.js';
import {
  validateCount,
  validateLedgerEntryId,
  validateLedgerIds,
  validateLedgerStates,
  validateNewLedgerEntry,
  validateNewMessage,
  validateObject,
  validateReason,
  validateSessionKey,
  validateTaskIdList,
} from '../validate-input.js';
import { appendMessageRow } from './message-log.js';
import { deleteEach } from './row-lists.js';
import { requireSession } from './session-records.js';

function priorityRank(row: LedgerRow): number {
  return LEDGER_PRIORITIES.indexOf(row.priority as (typeof LEDGER_PRIORITIES)[number]);
}

/** Queue order: by priority (`now`, `next`, `later`), then admission order. */
function byQueueOrder(a: LedgerRow, b: LedgerRow): number {
  return priorityRank(a) - priorityRank(b) || a.id - b.id;
}

/** Settles a queued entry as discarded, in the caller's write. */
function discardRow(ledger: LedgerTable, row: LedgerRow, reason: string, time: number): LedgerEntry {
  const next: LedgerRow = { ...row, state: 'discarded', reason, updatedAt: time };
  ledger.put(next, row);
  return readLedgerEntry(next);
}

export function createInputLedger(context: StoreContext): InputLedger {
  return {
    admit(entry) {
      const normalized = validateNewLedgerEntry(entry, context.maxFieldBytes);
      const time = context.now();
      return context.write('admit a ledger entry', ({ sessions, ledger }) => {
        const session = requireSession(sessions, normalized.sessionId);
        const existing = ledger.findByKey(normalized.sessionId, normalized.idempotencyKey);
        if (existing) return { entry: readLedgerEntry(existing), admitted: false };
        const row: Omit<LedgerRow, 'id'> = {
          ...normalized,
          schemaVersion: RECORD_SCHEMA_VERSION,
          state: 'queued',
          reason: null,
          branchGeneration: normalized.branchGeneration ?? session.branchGeneration,
          createdAt: time,
          updatedAt: time,
          deliveredInMessageSeq: null,
        };
        return { entry: readLedgerEntry({ ...row, id: ledger.insert(row) }), admitted: true };
      });
    },

    getLedgerEntry(id) {
      const key = validateLedgerEntryId('id', id);
      return context.readOne('read a ledger entry', ({ ledger }) => ledger.get(key), readLedgerEntry);
    },

    listLedger(sessionId, options = {}) {
      const key = validateSessionKey('sessionId', sessionId);
      validateObject('options', options);
      const states = options.states === undefined ? undefined : validateLedgerStates(options.states);
      return context.read('list ledger entries', ({ ledger }) =>
        ledger.select(key, states).map(readLedgerEntry),
      );
    },

    listQueued(sessionId, options = {}) {
      const key = validateSessionKey('sessionId', sessionId);
      validateObject('options', options);
      const afterId = options.afterId === undefined ? 0 : validateCount('afterId', options.afterId);
      return context.read('list queued entries', ({ ledger }) =>
        ledger.select(key, ['queued'], afterId).sort(byQueueOrder).map(readLedgerEntry),
      );
    },

    markDiscarded(ids, reason) {
      const keys = validateLedgerIds('ids', ids, true);
      const why = validateReason(reason);
      const time = context.now();
      return context.write('discard ledger entries', ({ ledger }) => {
        const rows = keys.map((id) => {
          const row = ledger.get(id);
          if (!row) throw new StoreRecordNotFoundError('ledger entry', id);
          return row;
        });
        const discarded: LedgerEntry[] = [];
        const unchanged: LedgerEntry[] = [];
        for (const row of rows) {
          if (row.state === 'queued') discarded.push(discardRow(ledger, row, why, time));
          else unchanged.push(readLedgerEntry(row));
        }
        return { discarded, unchanged };
      });
    },

    discardQueued(sessionId, reason, options = {}) {
      const key = validateSessionKey('sessionId', sessionId);
      const why = validateReason(reason);
      validateObject('options', options);
      const keep = validateTaskIdList('keepTaskIds', options.keepTaskIds);
      const time = context.now();
      return context.write('discard queued entries', ({ sessions, ledger }) => {
        requireSession(sessions, key);
        return ledger
          .select(key, ['queued'])
          .filter((row) => row.taskId === null || !keep.has(row.taskId))
          .map((row) => discardRow(ledger, row, why, time));
      });
    },

    commitDelivery(sessionId, ledgerIds, message) {
      const key = validateSessionKey('sessionId', sessionId);
      const ids = validateLedgerIds('ledgerIds', ledgerIds);
      const normalized = validateNewMessage(message, context.maxFieldBytes);
      const time = context.now();
      return context.write('commit a delivery', (tables): DeliveryResult => {
        const session = requireSession(tables.sessions, key);
        const rows = ids.map((id) => {
          const row = tables.ledger.get(id);
          if (!row || row.sessionId !== key) {
            throw new StoreRecordNotFoundError(`ledger entry of session ${key}`, id);
          }
          return row;
        });
        const conflict = findDeliveryConflicts(session.branchGeneration, rows);
        if (conflict) {
          return { ok: false, code: conflict.code, conflicts: conflict.conflicts.map(readLedgerEntry) };
        }
        const messageRow = appendMessageRow(tables, session, normalized, time);
        const entries = rows.map((row) => {
          const next: LedgerRow = {
            ...row,
            state: 'delivered',
            deliveredInMessageSeq: messageRow.seq,
            updatedAt: time,
          };
          tables.ledger.put(next, row);
          return readLedgerEntry(next);
        });
        return { ok: true, message: readMessage(messageRow), entries };
      });
    },
  };
}

/** Delivered and discarded entries last changed before `cutoff` go; queued ones stay whatever their age. */
export function pruneSettledLedger(tables: StoreTables, cutoff: number): number {
  const old = tables.ledger.selectUpdatedBefore(cutoff).filter((row) => row.state !== 'queued');
  return deleteEach(old, (row) => tables.ledger.delete(row.id));
}
