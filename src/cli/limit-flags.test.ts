/** The resource-limit flags of `errand mcp` and `errand chat`, read into the runtime's option. */
import { describe, expect, it } from 'vitest';
import { UsageError } from './args.js';
import { parseDuration, parseSize, resourceLimitsFromFlags } from './limit-flags.js';

describe('limit flags', () => {
  it('reads sizes, times and counts for each command and for the session', () => {
    expect(
      resourceLimitsFromFlags({
        'memory-limit': '512M',
        'cpu-time-limit': '90s',
        cpus: '0.5',
        'pids-limit': '256',
        'session-memory-limit': '2G',
        'session-pids-limit': '1024',
        'limits-mechanism': 'cgroup-v1',
      }),
    ).toEqual({
      task: { memoryBytes: 512 * 1024 ** 2, cpuTimeMs: 90_000, cpus: 0.5, pids: 256 },
      session: { memoryBytes: 2 * 1024 ** 3, pids: 1024 },
      mechanism: 'cgroup-v1',
    });
    expect(resourceLimitsFromFlags({})).toBeUndefined();
    expect(parseSize('memory-limit', '1048576')).toBe(1048576);
    expect(parseSize('memory-limit', '1.5GiB')).toBe(1.5 * 1024 ** 3);
    expect(parseDuration('cpu-time-limit', '1500ms')).toBe(1500);
    expect(parseDuration('cpu-time-limit', '5m')).toBe(300_000);
    expect(parseDuration('cpu-time-limit', '2')).toBe(2000);
  });

  it.each([
    [{ 'memory-limit': 'lots' }, 'Expected `--memory-limit` to be a size such as 512M or 2G, got "lots"'],
    [
      { 'cpu-time-limit': '-1s' },
      'Expected `--cpu-time-limit` to be a time such as 90s, 5m or 1500ms, got "-1s"',
    ],
    [{ 'session-pids-limit': '2.5' }, 'Expected `--session-pids-limit` to be a positive integer, got "2.5"'],
    [{ cpus: '0' }, 'Expected `--cpus` to be a positive number, got "0"'],
    [
      { 'pids-limit': '8', 'limits-mechanism': 'v3' },
      'Expected `--limits-mechanism` to be one of auto, cgroup-v2, cgroup-v1, rlimit, got "v3"',
    ],
  ])('refuses %j', (values, message) => {
    expect(() => resourceLimitsFromFlags(values)).toThrow(new UsageError(message));
  });
});
