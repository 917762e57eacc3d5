import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    pool: 'forks',
    setupFiles: ['test/setup/temp-dir.ts', 'test/setup/leak-check.ts', 'test/setup/console-guard.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Process-heavy suites must not starve each other on a 2-core machine.
    maxWorkers: 2,
  },
});
