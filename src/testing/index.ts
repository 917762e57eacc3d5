/** Test doubles that follow Errand's contracts, for harness authors' tests and Errand's own. */
export * from './scripted-model.js';
export * from './scripted-task.js';
