/** Text utilities with no dependencies: UTF-8 budgets, line helpers, XML escaping, truncation markers. */
export * from './fit-tail.js';
export * from './lines.js';
export * from './truncation-marker.js';
export * from './utf8.js';
export * from './xml.js';
