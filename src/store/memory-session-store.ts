/**
 * The in-memory session store, for tests and for hosts that persist nothing: the same eight parts and
 * rules as the SQLite store (`compose-session-store.ts`) over maps in this process (`memory-tables.ts`).
 * Nothing survives the process and no other process sees it (`capabilities` says so).
 */
import { composeSessionStore } from './compose-session-store.js';
import { createMemoryBackend } from './memory-tables.js';
import { type SessionStoreOptions, sessionStoreOptions } from './options.js';
import type { SessionStore } from './session-store.js';

/** A session store that lives in this process's memory. */
export type MemorySessionStore = SessionStore;

export function createMemorySessionStore(options: SessionStoreOptions = {}): MemorySessionStore {
  return composeSessionStore(createMemoryBackend(), sessionStoreOptions.resolve(options));
}
