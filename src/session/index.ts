/** The session runtime: sessions, the turn loop, the model port, the command queue. */
export * from './command-queue.js';
export * from './model-port.js';
export * from './notification-delivery-error.js';
export * from './session.js';
export * from './session-events.js';
export * from './session-options.js';
export * from './session-runtime.js';
export { toModelMessages } from './turn-loop.js';
