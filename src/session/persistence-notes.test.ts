import { describe, expect, it } from 'vitest';
import { PersistenceNotes } from './persistence-notes.js';

const failure = { error: new Error('disk full'), since: 0, pending: 1 };

describe('PersistenceNotes', () => {
  it('says the store is failing once, and that it works again only to a session that heard it failing', () => {
    const open = ['heard', 'unheard'];
    const notes = new PersistenceNotes(() => open);
    notes.changed(failure);
    expect(notes.take('heard')).toContain('cannot be written (disk full)');
    expect(notes.take('heard')).toBeUndefined();
    notes.changed(undefined);
    expect(notes.take('heard')).toContain('can be written again');
    expect(notes.take('unheard')).toBeUndefined();
    expect(notes.take('heard')).toBeUndefined();
  });

  it('tells a session opened while the store fails, and forgets a closed one', () => {
    const notes = new PersistenceNotes(() => ['s']);
    notes.opened('s', failure);
    notes.forget('s');
    expect(notes.take('s')).toBeUndefined();
    notes.opened('s', undefined);
    expect(notes.take('s')).toBeUndefined();
    notes.opened('s', failure);
    expect(notes.take('s')).toContain('new background work is refused');
  });
});
