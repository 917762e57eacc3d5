/** Text utilities: UTF-8 budgets and file tails, line helpers, XML escaping, truncation markers. */
export * from './file-tail.js';
export * from './fit-tail.js';
export * from './lines.js';
export * from './truncation-marker.js';
export * from './utf8.js';
export * from './utf8-bytes.js';
export * from './xml.js';
