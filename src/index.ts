/** Errand: a background-task runtime for LLM agent harnesses. */
export * from './registry/index.js';
export * from './tasks/index.js';
export * from './tools/index.js';
