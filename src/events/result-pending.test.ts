import { describe, expect, it } from 'vitest';
import {
  isResultPending,
  isSupersededDetail,
  type ResultPendingLedger,
  type ResultPendingTask,
} from './result-pending.js';

function task(overrides: Partial<ResultPendingTask> = {}): ResultPendingTask {
  return {
    status: 'completed',
    reported: false,
    stopInitiator: undefined,
    branchGeneration: 0,
    superseded: false,
    ...overrides,
  };
}

function ledger(overrides: Partial<ResultPendingLedger> = {}): ResultPendingLedger {
  return { sessionGeneration: 0, queued: false, notifying: false, ...overrides };
}

describe('isResultPending', () => {
  const cases: [string, Partial<ResultPendingTask>, Partial<ResultPendingLedger>, boolean][] = [
    ['an end nobody took yet', {}, {}, true],
    ['an end whose notification is being queued', { reported: true }, { notifying: true }, true],
    ['an end whose notification waits in the ledger', { reported: true }, { queued: true }, true],
    ['a failed end waiting in the ledger', { status: 'failed', reported: true }, { queued: true }, true],
    [
      "a person's stop waiting in the ledger",
      { status: 'killed', stopInitiator: 'user', reported: true },
      { queued: true },
      true,
    ],
    ['a delivered or discarded notification', { reported: true }, {}, false],
    ['an end a waiter took (its own call reported it)', { reported: true }, {}, false],
    ['running work', { status: 'running' }, { queued: true }, false],
    ['stopping work', { status: 'stopping' }, {}, false],
    ['a session that can be told nothing more', {}, { sessionGeneration: undefined, queued: true }, false],
    ["the model's own stop", { status: 'killed', stopInitiator: 'model' }, {}, false],
    [
      "the model's own stop, its notifier's claim",
      { status: 'killed', stopInitiator: 'model', reported: true },
      { notifying: true },
      false,
    ],
    [
      "the model's own stop of a kind notified anyway",
      { status: 'killed', stopInitiator: 'model', reported: true },
      { queued: true },
      true,
    ],
    ['an end of an abandoned branch', { branchGeneration: 1 }, { sessionGeneration: 2 }, false],
    ['a superseded run', { superseded: true }, {}, false],
  ];

  it.each(cases)('%s', (_name, taskFacts, ledgerFacts, expected) => {
    expect(isResultPending(task(taskFacts), ledger(ledgerFacts))).toBe(expected);
  });
});

describe('isSupersededDetail', () => {
  it('reads a replacement run out of the detail', () => {
    expect(isSupersededDetail({ supersededBy: 'run-2' })).toBe(true);
    expect(isSupersededDetail({ supersededBy: true })).toBe(true);
    for (const value of [undefined, null, false, '']) {
      expect(isSupersededDetail({ supersededBy: value })).toBe(false);
    }
    expect(isSupersededDetail({})).toBe(false);
  });
});
