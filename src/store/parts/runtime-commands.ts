/**
 * The runtime commands part of a store: requests one process addresses to the runtime holding a session
 * (`errand serve`'s Stop), answered once by that runtime or expired by the asker.
 */
import { StoreRecordNotFoundError } from '../errors.js';
import {
  applyAnswer,
  readCommand,
  validateCommandAnswer,
  validateCommandId,
  validateCommandLimit,
  validateNewCommand,
} from '../runtime-command-rules.js';
import type { RuntimeCommands } from '../session-store.js';
import type { StoreContext } from '../store-context.js';
import type { StoreTables } from '../store-tables.js';
import { validateCount, validateName } from '../validate-input.js';
import { deleteEach } from './row-lists.js';
import { requireSession } from './session-records.js';

const EXPIRED = { state: 'expired', reason: null } as const;

export function createRuntimeCommands(context: StoreContext): RuntimeCommands {
  return {
    submitCommand(input) {
      const fields = validateNewCommand(input, context.now());
      return context.write('submit a command', ({ sessions, commands }) => {
        requireSession(sessions, fields.sessionId);
        return readCommand({ ...fields, id: commands.insert(fields) });
      });
    },

    getCommand(id) {
      const key = validateCommandId('id', id);
      return context.readOne('read a command', ({ commands }) => commands.get(key), readCommand);
    },

    listPendingCommands(runtime, limit) {
      const key = validateName('runtime', runtime);
      const count = validateCommandLimit(limit);
      return context.read('list pending commands', ({ commands }) =>
        commands.selectPending(key, count).map(readCommand),
      );
    },

    answerCommand(id, answer) {
      const key = validateCommandId('id', id);
      const normalized = validateCommandAnswer(answer);
      const time = context.now();
      return context.write('answer a command', ({ commands }) => {
        const row = commands.get(key);
        if (!row) throw new StoreRecordNotFoundError('command', key);
        const next = applyAnswer(row, normalized, time);
        if (next === undefined) return { command: readCommand(row), answered: false };
        commands.put(next, row);
        return { command: readCommand(next), answered: true };
      });
    },

    expireCommands(createdBefore) {
      const cutoff = validateCount('createdBefore', createdBefore);
      const time = context.now();
      return context.write('expire commands', ({ commands }) =>
        commands.selectPendingBefore(cutoff).flatMap((row) => {
          const next = applyAnswer(row, EXPIRED, time);
          if (next === undefined) return [];
          commands.put(next, row);
          return [readCommand(next)];
        }),
      );
    },
  };
}

/** Commands answered before `cutoff` go, and so do pending ones submitted before it (never answered). */
export function pruneCommands(tables: StoreTables, cutoff: number): number {
  return deleteEach(tables.commands.selectSettledBefore(cutoff), (row) => tables.commands.delete(row.id));
}
