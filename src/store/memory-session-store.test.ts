import { expect, it } from 'vitest';
import { describeSessionStoreConformance } from './conformance/index.js';
import { createMemorySessionStore } from './memory-session-store.js';

describeSessionStoreConformance('in-memory', (options) => createMemorySessionStore(options));

it('declares that nothing outlives the process and no other process sees it', () => {
  expect(createMemorySessionStore().capabilities).toEqual({
    sharedAcrossProcesses: false,
    persistent: false,
  });
});
