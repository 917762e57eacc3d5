import { describeSessionStoreConformance } from './conformance/index.js';
import { MemorySessionStore } from './memory-session-store.js';

describeSessionStoreConformance('in-memory', (options) => new MemorySessionStore(options));
