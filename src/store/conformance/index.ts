/**
 * The conformance suite every SessionStore provider must pass. A provider's test file calls
 * `describeSessionStoreConformance('my provider', (options) => openMyStore(options))`. Uses vitest; it is
 * test support, not part of the runtime API.
 */
import { describe } from 'vitest';
import { describeBounds } from './bounds.js';
import type { OpenSessionStore } from './harness.js';
import { describeInputLedger } from './input-ledger.js';
import { describeLedgerModel } from './ledger-model.js';
import { describeRuntimeCommands } from './runtime-commands.js';
import { describeSchedules } from './schedules.js';
import { describeSessionsAndMessages } from './sessions-and-messages.js';
import { describeTasksAndWorkflows } from './tasks-and-workflows.js';

export { expectErrandError, type OpenSessionStore, START_TIME } from './harness.js';

export interface ConformanceOptions {
  /** Random operation sequences the ledger model test runs. Default 100. */
  readonly modelRuns?: number;
}

export function describeSessionStoreConformance(
  name: string,
  openStore: OpenSessionStore,
  options: ConformanceOptions = {},
): void {
  describe(`SessionStore conformance: ${name}`, () => {
    // Each area in its own block, so each test opens exactly one store of its own.
    describe('records', () => describeSessionsAndMessages(openStore));
    describe('ledger', () => describeInputLedger(openStore));
    describe('tasks', () => describeTasksAndWorkflows(openStore));
    describe('bounds', () => describeBounds(openStore));
    describe('runtime commands', () => describeRuntimeCommands(openStore));
    describe('schedule definitions', () => describeSchedules(openStore));
    describeLedgerModel(openStore, options.modelRuns ?? 100);
  });
}
