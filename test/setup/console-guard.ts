/**
 * Fails a test that writes to the console unexpectedly. Code under test takes an injected logger;
 * console output in a test means something logged where it should not.
 */
import { formatWithOptions } from 'node:util';
import { afterEach, beforeEach, vi } from 'vitest';

const methods = ['log', 'info', 'warn', 'error', 'debug'] as const;
let unexpected: string[] = [];

beforeEach(() => {
  unexpected = [];
  for (const method of methods) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      unexpected.push(`console.${method}: ${formatWithOptions({ colors: false }, ...args)}`);
    });
  }
});

afterEach(() => {
  for (const method of methods) {
    const spied = console[method] as unknown as { mockRestore?: () => void };
    spied.mockRestore?.();
  }
  if (unexpected.length > 0) {
    const lines = unexpected.join('\n');
    unexpected = [];
    throw new Error(`Unexpected console output:\n${lines}`);
  }
});
