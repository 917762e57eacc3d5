/**
 * The task contract: ids, statuses, errors, owners, the clock and logger every part is given, and the
 * TaskService interface. Imports nothing of ours.
 */

export * from './clock.js';
export * from './errors.js';
export * from './ids.js';
export * from './logger.js';
export * from './option-rules.js';
export type * from './option-types.js';
export { type DefineOptionsSettings, defineOptions, type OptionsDeclaration } from './options.js';
export type * from './output-stream.js';
export * from './owner.js';
export * from './status.js';
export type * from './task-service.js';
export type * from './types.js';
