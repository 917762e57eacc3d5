/** The Vercel AI SDK adapter: tools from Errand definitions, and notifications through steering. Needs `ai`. */

export * from './ai-sdk-model.js';
export * from './ai-sdk-notifications.js';
export * from './ai-sdk-tools.js';
