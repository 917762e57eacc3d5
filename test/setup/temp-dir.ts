/**
 * Every test file gets a temporary directory of its own as TMPDIR, for itself and for every process it
 * starts with the environment it inherits; removed after the file, so what a test leaves in temporary
 * files (a runtime it killed leaves its output directory, as it must for a resume) goes with it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const root = mkdtempSync(join(tmpdir(), 'errand-test-'));
process.env.TMPDIR = root;

// Registered first, so it runs after the other setup files' hooks (the leak check kills what is left).
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});
