/** Errand: a background-task runtime for LLM agent harnesses. */
export * from './adapters/index.js';
export * from './notifications/index.js';
export * from './producers/bash/index.js';
export * from './producers/pty/index.js';
export * from './producers/subagent/index.js';
export * from './producers/workflow/index.js';
export * from './registry/index.js';
export * from './session/index.js';
export * from './store/index.js';
export * from './tasks/index.js';
export * from './text/index.js';
export * from './tools/index.js';
export * from './tracing/index.js';
