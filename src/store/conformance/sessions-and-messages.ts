/** Conformance: session records and the conversation log (seq, visibility, rewind, branch generations). */
import { describe, expect, it } from 'vitest';
import { expectErrandError, type OpenSessionStore, START_TIME, useHarness } from './harness.js';

export function describeSessionsAndMessages(openStore: OpenSessionStore): void {
  const harness = useHarness(openStore);

  describe('transactions', () => {
    it('keeps every change of a transaction, or none when its body throws', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const kept = harness.store.transaction(() => {
        const message = harness.store.appendMessage('s', {
          role: 'user',
          content: { text: 'a' },
          source: 'user',
        });
        harness.store.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k1', text: 'n1' });
        return message.seq;
      });
      expect(kept).toBe(1);
      expect(() =>
        harness.store.transaction(() => {
          harness.store.appendMessage('s', { role: 'user', content: { text: 'b' }, source: 'user' });
          harness.store.admit({ sessionId: 's', kind: 'notification', idempotencyKey: 'k2', text: 'n2' });
          throw new Error('the caller changed its mind');
        }),
      ).toThrow('the caller changed its mind');
      expect(harness.store.listMessages('s').map((message) => message.content.text)).toEqual(['a']);
      expect(harness.store.listLedger('s').map((entry) => entry.idempotencyKey)).toEqual(['k1']);
      // The next message takes the next seq: nothing of the undone one is left.
      expect(
        harness.store.appendMessage('s', { role: 'user', content: { text: 'c' }, source: 'user' }).seq,
      ).toBe(2);
    });

    it('undoes only a nested call that throws and is caught, and joins nested transactions', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.transaction(() => {
        harness.store.appendMessage('s', { role: 'user', content: { text: 'a' }, source: 'user' });
        // A call the store refuses inside the transaction: only it is undone.
        expectErrandError(() => harness.store.createSession({ id: 's', cwd: '/' }), 'STORE_RECORD_EXISTS');
        expect(() =>
          harness.store.transaction(() => {
            harness.store.appendMessage('s', { role: 'user', content: { text: 'b' }, source: 'user' });
            throw new Error('inner');
          }),
        ).toThrow('inner');
        harness.store.transaction(() =>
          harness.store.appendMessage('s', { role: 'user', content: { text: 'c' }, source: 'user' }),
        );
      });
      expect(harness.store.listMessages('s').map((message) => message.content.text)).toEqual(['a', 'c']);
    });
  });

  describe('sessions', () => {
    it('creates a session with defaults and reads it back', () => {
      const created = harness.store.createSession({ id: 'session-1', cwd: '/work' });
      expect(created).toEqual({
        schemaVersion: 1,
        id: 'session-1',
        parentId: undefined,
        cwd: '/work',
        title: undefined,
        branchGeneration: 0,
        state: 'active',
        createdAt: START_TIME,
        updatedAt: START_TIME,
        metadata: {},
      });
      expect(harness.store.getSession('session-1')).toEqual(created);
      expect(harness.store.getSession('session-2')).toBeUndefined();
    });

    it('gives a session one holder: a live other holder keeps it, a stale one or the same runtime does not', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const first = { runtime: 'runtime-a', pid: 101, processStart: '7', acquiredAt: START_TIME };
      expect(harness.store.acquireSession('s', first, () => true).holder).toEqual(first);
      // The same runtime acquiring again is not a conflict.
      expect(
        harness.store.acquireSession('s', { ...first, acquiredAt: START_TIME + 1 }, () => true).holder,
      ).toEqual({
        ...first,
        acquiredAt: START_TIME + 1,
      });
      const second = { runtime: 'runtime-b', pid: 202, acquiredAt: START_TIME + 2 };
      const seen: unknown[] = [];
      const inUse = expectErrandError(
        () =>
          harness.store.acquireSession('s', second, (current) => {
            seen.push(current);
            return true;
          }),
        'SESSION_IN_USE',
      );
      expect(inUse.message).toContain('process 101');
      expect(seen).toEqual([{ ...first, acquiredAt: START_TIME + 1 }]);
      expect(harness.store.getSession('s')?.holder?.runtime).toBe('runtime-a');
      // A holder whose process is gone is replaced.
      expect(harness.store.acquireSession('s', second, () => false).holder).toEqual(second);
      // Releasing is only for the current holder.
      harness.store.releaseSession('s', 'runtime-a');
      expect(harness.store.getSession('s')?.holder?.runtime).toBe('runtime-b');
      harness.store.releaseSession('s', 'runtime-b');
      expect(harness.store.getSession('s')?.holder).toBeUndefined();
      harness.store.releaseSession('missing', 'runtime-b');
    });

    it('refuses a malformed holder and an unknown session', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const holder = { runtime: 'r', pid: 1, acquiredAt: START_TIME };
      const badPid = expectErrandError(
        () => harness.store.acquireSession('s', { ...holder, pid: -3 }, () => true),
        'INVALID_ARGUMENT',
      );
      expect(badPid.message).toContain('`holder.pid`');
      expectErrandError(() => harness.store.acquireSession('s', holder, 'no' as never), 'INVALID_ARGUMENT');
      expectErrandError(
        () => harness.store.acquireSession('missing', holder, () => true),
        'STORE_RECORD_NOT_FOUND',
      );
      expect(harness.store.getSession('s')?.holder).toBeUndefined();
    });

    it('keeps metadata as JSON and hands out copies', () => {
      const metadata = { model: 'scripted', tags: ['a', 'b'], nested: { depth: 1, flag: true, none: null } };
      const created = harness.store.createSession({ id: 's', cwd: '/', title: 'Title', metadata });
      (created.metadata as Record<string, unknown>).model = 'changed';
      expect(harness.store.getSession('s')?.metadata).toEqual(metadata);
      expect(harness.store.getSession('s')?.title).toBe('Title');
    });

    it('refuses a taken id, an unknown parent and malformed input before writing', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      expectErrandError(() => harness.store.createSession({ id: 's', cwd: '/' }), 'STORE_RECORD_EXISTS');
      expectErrandError(
        () => harness.store.createSession({ id: 'child', parentId: 'missing', cwd: '/' }),
        'STORE_RECORD_NOT_FOUND',
      );
      const badId = expectErrandError(
        () => harness.store.createSession({ id: 'has space', cwd: '/' }),
        'INVALID_ARGUMENT',
      );
      expect(badId.message).toContain('`id`');
      expect(badId.message).toContain('"has space"');
      const badMetadata = expectErrandError(
        () => harness.store.createSession({ id: 'x', cwd: '/', metadata: { when: new Date(0) } as never }),
        'INVALID_ARGUMENT',
      );
      expect(badMetadata.message).toContain('`metadata.when`');
      expectErrandError(
        () => harness.store.createSession({ id: 'y', cwd: '/', metadata: { ratio: Number.NaN } }),
        'INVALID_ARGUMENT',
      );
      expect(harness.store.listSessions().map((session) => session.id)).toEqual(['s']);
    });

    it('lists sessions oldest first, by parent and by state', () => {
      harness.store.createSession({ id: 'root', cwd: '/' });
      harness.advance(1);
      harness.store.createSession({ id: 'child-b', parentId: 'root', cwd: '/' });
      harness.advance(1);
      harness.store.createSession({ id: 'child-a', parentId: 'root', cwd: '/' });
      harness.store.updateSession('child-b', { state: 'closed' });
      expect(harness.store.listSessions().map((session) => session.id)).toEqual([
        'root',
        'child-b',
        'child-a',
      ]);
      expect(harness.store.listSessions({ parentId: 'root' }).map((session) => session.id)).toEqual([
        'child-b',
        'child-a',
      ]);
      expect(harness.store.listSessions({ state: 'closed' }).map((session) => session.id)).toEqual([
        'child-b',
      ]);
      expect(harness.store.listSessions({ parentId: 'child-a' })).toEqual([]);
    });

    it('updates title, state, metadata and branch generation; generations never go back', () => {
      harness.store.createSession({ id: 's', cwd: '/', title: 'old' });
      harness.advance(5);
      const updated = harness.store.updateSession('s', {
        title: 'new',
        state: 'closed',
        branchGeneration: 2,
        metadata: { k: 1 },
      });
      expect(updated).toMatchObject({
        title: 'new',
        state: 'closed',
        branchGeneration: 2,
        metadata: { k: 1 },
      });
      expect(updated.updatedAt).toBe(START_TIME + 5);
      expect(harness.store.updateSession('s', { title: null, state: 'active' })).toMatchObject({
        title: undefined,
        state: 'active',
        branchGeneration: 2,
      });
      const backwards = expectErrandError(
        () => harness.store.updateSession('s', { branchGeneration: 1 }),
        'STORE_INVALID_TRANSITION',
      );
      expect(backwards.message).toContain('branchGeneration');
      expectErrandError(() => harness.store.updateSession('nope', { title: 't' }), 'STORE_RECORD_NOT_FOUND');
      expectErrandError(
        () => harness.store.updateSession('s', { state: 'gone' as never }),
        'INVALID_ARGUMENT',
      );
      expect(harness.store.getSession('s')?.branchGeneration).toBe(2);
    });
  });

  describe('messages', () => {
    it('appends with a store-assigned seq, the current generation and the clock', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const first = harness.store.appendMessage('s', {
        role: 'user',
        content: { text: 'hi' },
        source: 'user',
      });
      harness.advance(10);
      const second = harness.store.appendMessage('s', {
        role: 'assistant',
        content: { text: 'calling', toolCalls: [{ id: 'call_1', name: 'bash', input: { command: 'ls' } }] },
        source: 'assistant',
      });
      const third = harness.store.appendMessage('s', {
        role: 'tool',
        content: { toolResults: [{ toolCallId: 'call_1', output: 'a\nb', isError: false }] },
        visibility: 'model-only',
        source: 'tool',
      });
      expect(first).toEqual({
        schemaVersion: 1,
        sessionId: 's',
        seq: 1,
        role: 'user',
        content: { text: 'hi' },
        visibility: 'all',
        source: 'user',
        branchGeneration: 0,
        createdAt: START_TIME,
        abandoned: false,
      });
      expect([second.seq, third.seq]).toEqual([2, 3]);
      expect(second.createdAt).toBe(START_TIME + 10);
      expect(third.visibility).toBe('model-only');
      expect(harness.store.listMessages('s')).toEqual([first, second, third]);
      expect(harness.store.getSession('s')?.updatedAt).toBe(START_TIME + 10);
    });

    it('numbers each session on its own and pages with afterSeq and limit', () => {
      harness.store.createSession({ id: 'a', cwd: '/' });
      harness.store.createSession({ id: 'b', cwd: '/' });
      for (let index = 0; index < 5; index += 1) {
        harness.store.appendMessage('a', { role: 'user', content: { text: `a${index}` }, source: 'user' });
      }
      expect(
        harness.store.appendMessage('b', { role: 'user', content: { text: 'b' }, source: 'user' }).seq,
      ).toBe(1);
      expect(
        harness.store.listMessages('a', { afterSeq: 2, limit: 2 }).map((message) => message.seq),
      ).toEqual([3, 4]);
      expect(harness.store.listMessages('a', { limit: 0 })).toEqual([]);
      expect(harness.store.listMessages('unknown')).toEqual([]);
    });

    it('pages back from the end with beforeSeq and limit, oldest first within the page', () => {
      harness.store.createSession({ id: 'a', cwd: '/' });
      for (let index = 0; index < 6; index += 1) {
        harness.store.appendMessage('a', { role: 'user', content: { text: `a${index}` }, source: 'user' });
      }
      const seqs = (options: Parameters<typeof harness.store.listMessages>[1]) =>
        harness.store.listMessages('a', options).map((message) => message.seq);
      expect(seqs({ beforeSeq: Number.MAX_SAFE_INTEGER, limit: 2 })).toEqual([5, 6]);
      expect(seqs({ beforeSeq: 5, limit: 2 })).toEqual([3, 4]);
      expect(seqs({ beforeSeq: 3, limit: 5 })).toEqual([1, 2]);
      expect(seqs({ beforeSeq: 1, limit: 5 })).toEqual([]);
      expect(seqs({ beforeSeq: 5 })).toEqual([1, 2, 3, 4]);
      expect(seqs({ afterSeq: 2, beforeSeq: 6, limit: 2 })).toEqual([4, 5]);
      // A rewind's abandoned messages stay out unless asked for.
      harness.store.rewind('a', 4);
      harness.store.appendMessage('a', { role: 'user', content: { text: 'again' }, source: 'user' });
      expect(seqs({ beforeSeq: Number.MAX_SAFE_INTEGER, limit: 3 })).toEqual([3, 4, 7]);
      expect(seqs({ beforeSeq: Number.MAX_SAFE_INTEGER, limit: 3, includeAbandoned: true })).toEqual([
        5, 6, 7,
      ]);
      expect(() => harness.store.listMessages('a', { beforeSeq: -1 })).toThrow('`beforeSeq`');
    });

    it('refuses malformed content, naming the field', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      const cases: [unknown, string][] = [
        [{}, '`content`'],
        [{ text: 3 }, '`content.text`'],
        [{ text: 'x', images: [] }, '`content`'],
        [{ toolCalls: [{ id: 'c', name: 'bash' }] }, '`content.toolCalls[0].input`'],
        [
          { toolCalls: [{ id: 'c', name: 'bash', input: { n: Number.POSITIVE_INFINITY } }] },
          '`content.toolCalls[0].input.n`',
        ],
        [{ toolResults: [{ toolCallId: '', output: 1 }] }, '`content.toolResults[0].toolCallId`'],
      ];
      for (const [content, field] of cases) {
        const error = expectErrandError(
          () => harness.store.appendMessage('s', { role: 'user', content: content as never, source: 'user' }),
          'INVALID_ARGUMENT',
        );
        expect(error.message).toContain(field);
      }
      expectErrandError(
        () =>
          harness.store.appendMessage('s', {
            role: 'robot' as never,
            content: { text: 'x' },
            source: 'user',
          }),
        'INVALID_ARGUMENT',
      );
      expectErrandError(
        () =>
          harness.store.appendMessage('missing', { role: 'user', content: { text: 'x' }, source: 'user' }),
        'STORE_RECORD_NOT_FOUND',
      );
      expect(harness.store.listMessages('s')).toEqual([]);
    });

    it('rewinds: later messages are abandoned but kept, the generation grows, seqs are never reused', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      for (const text of ['one', 'two', 'three', 'four']) {
        harness.store.appendMessage('s', { role: 'user', content: { text }, source: 'user' });
      }
      harness.advance(7);
      const result = harness.store.rewind('s', 2);
      expect(result.session.branchGeneration).toBe(1);
      expect(result.abandoned.map((message) => [message.seq, message.abandoned])).toEqual([
        [3, true],
        [4, true],
      ]);
      expect(harness.store.listMessages('s').map((message) => message.content.text)).toEqual(['one', 'two']);
      const all = harness.store.listMessages('s', { includeAbandoned: true });
      expect(all.map((message) => [message.seq, message.abandoned])).toEqual([
        [1, false],
        [2, false],
        [3, true],
        [4, true],
      ]);
      const next = harness.store.appendMessage('s', {
        role: 'user',
        content: { text: 'five' },
        source: 'user',
      });
      expect(next).toMatchObject({ seq: 5, branchGeneration: 1 });
      expect(harness.store.rewind('s', 0).abandoned.map((message) => message.seq)).toEqual([1, 2, 5]);
      expect(harness.store.listMessages('s')).toEqual([]);
      expect(harness.store.getSession('s')?.branchGeneration).toBe(2);
    });

    it('refuses a rewind past the last message and an append on a stale branch', () => {
      harness.store.createSession({ id: 's', cwd: '/' });
      harness.store.appendMessage('s', { role: 'user', content: { text: 'x' }, source: 'user' });
      const past = expectErrandError(() => harness.store.rewind('s', 2), 'INVALID_ARGUMENT');
      expect(past.message).toContain('`toSeq`');
      expectErrandError(() => harness.store.rewind('s', -1), 'INVALID_ARGUMENT');
      expectErrandError(() => harness.store.rewind('missing', 0), 'STORE_RECORD_NOT_FOUND');
      harness.store.rewind('s', 1);
      const stale = expectErrandError(
        () =>
          harness.store.appendMessage('s', {
            role: 'user',
            content: { text: 'late' },
            source: 'background_task',
            branchGeneration: 0,
          }),
        'STORE_STALE_BRANCH',
      );
      expect(stale.context).toMatchObject({ expected: 0, current: 1 });
      expect(
        harness.store.appendMessage('s', {
          role: 'user',
          content: { text: 'ok' },
          source: 'user',
          branchGeneration: 1,
        }).seq,
      ).toBe(2);
    });
  });
}
