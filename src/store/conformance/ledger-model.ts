/**
 * Conformance: random sequences of ledger operations against a small reference model. After every step
 * the store agrees with the model, and the ledger invariants hold: an entry is queued, discarded, or
 * delivered in exactly one existing message; settled entries never change again.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../records.js';
import type { SessionStore } from '../session-store.js';
import type { OpenSessionStore } from './harness.js';

type Operation =
  | {
      readonly type: 'admit';
      readonly key: number;
      readonly kind: 'notification' | 'user_input';
      readonly priority: 'now' | 'next' | 'later';
    }
  | { readonly type: 'deliver'; readonly picks: readonly number[] }
  | { readonly type: 'discard'; readonly picks: readonly number[] }
  | { readonly type: 'discardQueued' }
  | { readonly type: 'rewind' };

interface ModelEntry {
  readonly id: number;
  readonly kind: 'notification' | 'user_input';
  readonly generation: number;
  state: 'queued' | 'delivered' | 'discarded';
  seq: number | undefined;
}

const operation: fc.Arbitrary<Operation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      type: fc.constant('admit' as const),
      key: fc.integer({ min: 0, max: 12 }),
      kind: fc.constantFrom('notification' as const, 'user_input' as const),
      priority: fc.constantFrom('now' as const, 'next' as const, 'later' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      type: fc.constant('deliver' as const),
      picks: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      type: fc.constant('discard' as const),
      picks: fc.array(fc.nat(), { maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ type: 'discardQueued' as const }) },
  { weight: 1, arbitrary: fc.constant({ type: 'rewind' as const }) },
);

function pickIds(model: readonly ModelEntry[], picks: readonly number[]): number[] {
  if (model.length === 0) return [];
  return [...new Set(picks.map((pick) => model[pick % model.length]!.id))];
}

function apply(
  store: SessionStore,
  model: ModelEntry[],
  state: { generation: number; seq: number },
  step: Operation,
): void {
  switch (step.type) {
    case 'admit': {
      const result = store.admit({
        sessionId: 's',
        kind: step.kind,
        idempotencyKey: `key-${step.key}`,
        priority: step.priority,
        text: `entry ${step.key}`,
      });
      const known = model.find((entry) => entry.id === result.entry.id);
      expect(result.admitted).toBe(known === undefined);
      if (!known)
        model.push({
          id: result.entry.id,
          kind: step.kind,
          generation: state.generation,
          state: 'queued',
          seq: undefined,
        });
      return;
    }
    case 'deliver': {
      const ids = pickIds(model, step.picks);
      if (ids.length === 0) return;
      const chosen = ids.map((id) => model.find((entry) => entry.id === id)!);
      const result = store.commitDelivery('s', ids, {
        role: 'user',
        content: { text: ids.join(',') },
        source: 'background_task',
      });
      const settled = chosen.filter((entry) => entry.state !== 'queued');
      const stale = chosen.filter(
        (entry) => entry.kind === 'notification' && entry.generation !== state.generation,
      );
      if (settled.length > 0) {
        expect(result).toMatchObject({ ok: false, code: 'LEDGER_ENTRY_NOT_QUEUED' });
      } else if (stale.length > 0) {
        expect(result).toMatchObject({ ok: false, code: 'LEDGER_ENTRY_STALE_BRANCH' });
      } else {
        state.seq += 1;
        expect(result.ok && result.message.seq).toBe(state.seq);
        for (const entry of chosen) {
          entry.state = 'delivered';
          entry.seq = state.seq;
        }
      }
      return;
    }
    case 'discard': {
      const ids = pickIds(model, step.picks);
      const result = store.markDiscarded(ids, 'superseded');
      const queued = ids.filter((id) => model.find((entry) => entry.id === id)!.state === 'queued');
      expect(result.discarded.map((entry) => entry.id)).toEqual(queued);
      for (const id of queued) model.find((entry) => entry.id === id)!.state = 'discarded';
      return;
    }
    case 'discardQueued': {
      const discarded = store.discardQueued('s', 'session_resumed');
      const queued = model.filter((entry) => entry.state === 'queued');
      expect(discarded.map((entry) => entry.id)).toEqual(queued.map((entry) => entry.id));
      for (const entry of queued) entry.state = 'discarded';
      return;
    }
    case 'rewind': {
      store.rewind('s', state.seq);
      state.generation += 1;
      return;
    }
  }
}

function checkInvariants(store: SessionStore, model: readonly ModelEntry[]): void {
  const entries = store.listLedger('s');
  expect(entries.map((entry) => [entry.id, entry.state, entry.deliveredInMessageSeq])).toEqual(
    model.map((entry) => [entry.id, entry.state, entry.seq]),
  );
  const messages = new Map(
    store.listMessages('s', { includeAbandoned: true }).map((message) => [message.seq, message]),
  );
  const deliveredBy = new Map<number, LedgerEntry[]>();
  for (const entry of entries) {
    if (entry.state !== 'delivered') continue;
    const message = messages.get(entry.deliveredInMessageSeq!);
    expect(message, `entry ${entry.id} points at a missing message`).toBeDefined();
    deliveredBy.set(message!.seq, [...(deliveredBy.get(message!.seq) ?? []), entry]);
  }
  for (const [seq, delivered] of deliveredBy) {
    const carried = (messages.get(seq)?.content.text ?? '').split(',').map(Number);
    expect(carried.sort((a, b) => a - b)).toEqual(delivered.map((entry) => entry.id));
  }
  const queued = store.listQueued('s');
  const rank = { now: 0, next: 1, later: 2 };
  for (let index = 1; index < queued.length; index += 1) {
    const before = queued[index - 1]!;
    const after = queued[index]!;
    expect(
      rank[before.priority] < rank[after.priority] ||
        (before.priority === after.priority && before.id < after.id),
    ).toBe(true);
  }
}

export function describeLedgerModel(openStore: OpenSessionStore, runs: number): void {
  describe('input ledger model', () => {
    it('agrees with the reference model over random operation sequences', () => {
      fc.assert(
        fc.property(fc.array(operation, { minLength: 1, maxLength: 40 }), (operations) => {
          const store = openStore({});
          try {
            store.createSession({ id: 's', cwd: '/' });
            const model: ModelEntry[] = [];
            const state = { generation: 0, seq: 0 };
            for (const step of operations) {
              apply(store, model, state, step);
              checkInvariants(store, model);
            }
          } finally {
            store.close();
          }
        }),
        { numRuns: runs },
      );
    });
  });
}
