/**
 * A session store made of its eight parts (`parts/`) over one backend: every part shares the backend's
 * tables, the clock and the one transaction helper (`store-context.ts`). Both providers are this store:
 * SQLite over a file, and the in-memory store over maps in this process.
 */
import { pruneOptions as pruneOptionsDeclaration, type ResolvedSessionStoreOptions } from './options.js';
import { createInputLedger, pruneSettledLedger } from './parts/input-ledger.js';
import { createMessageLog, pruneAbandonedMessages } from './parts/message-log.js';
import { createRuntimeCommands, pruneCommands } from './parts/runtime-commands.js';
import { createScheduleDefinitions, pruneEndedSchedules } from './parts/schedule-definitions.js';
import { createSessionRecords, pruneClosedSessions } from './parts/session-records.js';
import { createTaskRecords, pruneFinishedTasks } from './parts/task-records.js';
import { createTaskSequences } from './parts/task-sequences.js';
import { createWorkflowJournal, pruneFinishedRuns } from './parts/workflow-journal.js';
import type { SessionStore } from './session-store.js';
import { createStoreContext } from './store-context.js';
import type { StoreBackend } from './store-tables.js';

export function composeSessionStore(
  backend: StoreBackend,
  options: ResolvedSessionStoreOptions,
): SessionStore {
  const context = createStoreContext(backend, options);
  return {
    capabilities: backend.capabilities,
    ...createSessionRecords(context),
    ...createMessageLog(context),
    ...createInputLedger(context),
    ...createTaskRecords(context),
    ...createWorkflowJournal(context),
    ...createRuntimeCommands(context),
    ...createTaskSequences(context),
    ...createScheduleDefinitions(context),

    transaction: (body, options) => context.write('run a transaction', () => body(), options?.durability),
    whenDurable: () => context.whenDurable(),

    prune(pruneOptions = {}) {
      const retention = pruneOptionsDeclaration.resolve(pruneOptions);
      const time = context.now();
      // Sessions first (their records go with them), and the ledger before the messages it may point at.
      return context.write('prune the store', (tables) => ({
        sessions: pruneClosedSessions(tables, retention.keepClosedSessions),
        ledgerEntries: pruneSettledLedger(tables, time - retention.settledLedgerMaxAgeMs),
        messages: pruneAbandonedMessages(tables, time - retention.abandonedMessageMaxAgeMs),
        tasks: pruneFinishedTasks(tables, time - retention.finishedRecordMaxAgeMs),
        workflowRuns: pruneFinishedRuns(tables, time - retention.finishedRecordMaxAgeMs),
        commands: pruneCommands(tables, time - retention.commandMaxAgeMs),
        schedules: pruneEndedSchedules(tables),
      }));
    },

    close: () => context.close(),
  };
}
