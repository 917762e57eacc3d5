/** Workflow runs as background tasks: the journaled engine, the producer, and the model-facing tools. */
export * from './errors.js';
export { memoryJournal, type StepJournal, storeJournal } from './journal.js';
export * from './script-loader.js';
export * from './stall-watch.js';
export type * from './workflow-context.js';
export * from './workflow-options.js';
export * from './workflow-producer.js';
export * from './workflow-tools.js';
