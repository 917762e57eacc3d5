/** A complete Errand runtime assembled from its parts. */
export * from './errand-runtime.js';
