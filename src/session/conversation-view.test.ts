/**
 * The in-memory conversation stays what the store holds: after any sequence of appends (of every role),
 * rewinds that abandon a tail, and reads in between, the view equals a full read of the live branch, on
 * both stores — and a read asks the store only for the messages after the last seq it holds. A view
 * whose writer hands it what it commits (a session) reads the store only when it cannot vouch for what it
 * holds: at first, after a rewind, after a record that does not follow, after a rolled-back write.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemorySessionStore } from '../store/memory-session-store.js';
import type { ListMessagesOptions, NewMessage, SessionStore } from '../store/session-store.js';
import { openSqliteSessionStore } from '../store/sqlite-session-store.js';
import { ConversationView, toModelMessages } from './conversation-view.js';

const root = mkdtempSync(join(tmpdir(), 'errand-conversation-'));
let files = 0;

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

type Operation =
  | { readonly kind: 'append'; readonly role: NewMessage['role']; readonly call: number }
  | { readonly kind: 'rewind'; readonly back: number }
  | { readonly kind: 'read' };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({
    kind: fc.constant('append' as const),
    role: fc.constantFrom<NewMessage['role']>('user', 'assistant', 'tool', 'system'),
    call: fc.nat(3),
  }),
  fc.record({ kind: fc.constant('rewind' as const), back: fc.nat(4) }),
  fc.constant({ kind: 'read' as const }),
);

function message(role: NewMessage['role'], call: number, index: number): NewMessage {
  const id = `call-${call}`;
  if (role === 'assistant') {
    return {
      role,
      content: { text: `a${index}`, toolCalls: [{ id, name: `tool${call}`, input: null }] },
      source: 'assistant',
    };
  }
  if (role === 'tool') {
    return { role, content: { toolResults: [{ toolCallId: id, output: `r${index}` }] }, source: 'tool' };
  }
  return { role, content: { text: `${role}${index}` }, source: role };
}

/** `store` with the `afterSeq` of every `listMessages` call recorded in `asked`. */
function watchReads(store: SessionStore): { watched: SessionStore; asked: (number | undefined)[] } {
  const asked: (number | undefined)[] = [];
  const watched: SessionStore = Object.create(store, {
    listMessages: {
      value: (sessionId: string, options?: ListMessagesOptions) => {
        asked.push(options?.afterSeq);
        return store.listMessages(sessionId, options);
      },
    },
  });
  return { watched, asked };
}

const stores: Record<string, () => SessionStore> = {
  memory: () => createMemorySessionStore(),
  sqlite: () =>
    openSqliteSessionStore({ file: join(root, `${++files}`, 'errand.sqlite'), synchronous: 'normal' }),
};

describe.each(Object.keys(stores))('the conversation view on the %s store', (kind) => {
  it('equals a full read of the live branch after appends, rewinds and reads (property)', () => {
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 40 }), (operations) => {
        const store = stores[kind]!();
        try {
          store.createSession({ id: 's', cwd: '/' });
          const view = new ConversationView(store, 's' as never);
          let index = 0;
          let lastSeq = 0;
          for (const step of [...operations, { kind: 'read' } as const]) {
            if (step.kind === 'append') {
              lastSeq = store.appendMessage('s', message(step.role, step.call, ++index)).seq;
            }
            if (step.kind === 'rewind') store.rewind('s', Math.max(0, lastSeq - step.back));
            if (step.kind === 'read') {
              const live = store.listMessages('s');
              expect(view.records()).toEqual(live);
              expect(view.modelMessages()).toEqual(toModelMessages(live));
            }
          }
        } finally {
          store.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('asks the store only for the messages after the last seq it read, until a rewind', () => {
    const store = stores[kind]!();
    const { watched, asked } = watchReads(store);
    try {
      store.createSession({ id: 's', cwd: '/' });
      const view = new ConversationView(watched, 's' as never);
      for (let index = 1; index <= 3; index += 1) store.appendMessage('s', message('user', 0, index));
      expect(view.modelMessages()).toHaveLength(3);
      store.appendMessage('s', message('user', 0, 4));
      expect(view.modelMessages()).toHaveLength(4);
      expect(view.modelMessages()).toHaveLength(4);
      store.rewind('s', 1);
      store.appendMessage('s', message('user', 0, 5));
      expect(view.records().map((record) => record.content.text)).toEqual(['user1', 'user5']);
      expect(asked).toEqual([0, 3, 4, 0]);
    } finally {
      store.close();
    }
  });

  /** A view whose writer (as a session does) hands it every message it commits, and the reads it makes. */
  function writtenView(store: SessionStore) {
    const { watched, asked } = watchReads(store);
    let generation = store.getSession('s')!.branchGeneration;
    const view = new ConversationView(watched, 's' as never, { writer: { generation: () => generation } });
    return {
      view,
      asked,
      append(next: NewMessage) {
        const record = store.appendMessage('s', next);
        view.appended(record);
        return record;
      },
      rewind(toSeq: number) {
        generation = store.rewind('s', toSeq).session.branchGeneration;
      },
    };
  }

  it('keeps what its writer committed without reading, and equals a full read (property)', () => {
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 40 }), (operations) => {
        const store = stores[kind]!();
        try {
          store.createSession({ id: 's', cwd: '/' });
          const writer = writtenView(store);
          let index = 0;
          let lastSeq = 0;
          let rewinds = 0;
          for (const step of [{ kind: 'read' } as const, ...operations, { kind: 'read' } as const]) {
            if (step.kind === 'append') lastSeq = writer.append(message(step.role, step.call, ++index)).seq;
            if (step.kind === 'rewind') {
              writer.rewind(Math.max(0, lastSeq - step.back));
              rewinds += 1;
            }
            if (step.kind === 'read') {
              const live = store.listMessages('s');
              expect(writer.view.records()).toEqual(live);
              expect(writer.view.modelMessages()).toEqual(toModelMessages(live));
            }
          }
          // The first read, and after a rewind one read of the branch and one for the first seq after it.
          expect(writer.asked.length).toBeLessThanOrEqual(1 + 2 * rewinds);
        } finally {
          store.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  /** A writer's view holding one message it was handed and has read, on a fresh store. */
  function withOneHeld(body: (store: SessionStore, writer: ReturnType<typeof writtenView>) => void): void {
    const store = stores[kind]!();
    try {
      store.createSession({ id: 's', cwd: '/' });
      const writer = writtenView(store);
      writer.append(message('user', 0, 1));
      expect(writer.view.records()).toHaveLength(1);
      body(store, writer);
    } finally {
      store.close();
    }
  }

  it('reads what was written another way once a committed record does not follow the last one held', () => {
    withOneHeld((store, writer) => {
      store.appendMessage('s', message('user', 0, 2));
      // Nothing told the view of seq 2: it holds what it was handed.
      expect(writer.view.records()).toHaveLength(1);
      writer.append(message('user', 0, 3));
      expect(writer.view.records().map((record) => record.content.text)).toEqual(['user1', 'user2', 'user3']);
      writer.append(message('user', 0, 4));
      expect(writer.view.records()).toHaveLength(4);
      expect(writer.asked).toEqual([0, 1]);
    });
  });

  it('starts over when a seq it holds is given again after its write was rolled back', () => {
    withOneHeld((store, writer) => {
      let phantom: ReturnType<SessionStore['appendMessage']> | undefined;
      expect(() =>
        store.transaction(() => {
          phantom = store.appendMessage('s', message('user', 0, 2));
          // Handed to the view inside a write that then fails.
          writer.view.appended(phantom);
          throw new Error('rolled back');
        }),
      ).toThrow('rolled back');
      expect(writer.view.records().map((record) => record.content.text)).toEqual(['user1', 'user2']);
      const again = writer.append(message('user', 0, 3));
      expect(again.seq).toBe(phantom!.seq);
      expect(writer.view.records()).toEqual(store.listMessages('s'));
      expect(writer.view.records().map((record) => record.content.text)).toEqual(['user1', 'user3']);
    });
  });
});
