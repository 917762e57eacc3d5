/** The `--redis` flags of `errand mcp`, `errand chat`, `errand serve` and `errand worker`: Sentinel URLs too. */
import { describe, expect, it } from 'vitest';
import { UsageError } from './args.js';
import { redisOption } from './redis-flags.js';

describe('redisOption', () => {
  it('takes redis://, rediss:// and redis+sentinel:// URLs, with the prefix', () => {
    expect(redisOption({ redis: 'redis://cache:6379' })).toEqual({ url: 'redis://cache:6379' });
    expect(redisOption({ redis: 'redis+sentinel://s1,s2:26380,s3/errand', 'redis-prefix': 'team' })).toEqual({
      url: 'redis+sentinel://s1,s2:26380,s3/errand',
      prefix: 'team',
    });
    expect(redisOption({})).toBeUndefined();
  });

  it('refuses a malformed sentinel URL as a usage error naming the flag and the problem, never the password', () => {
    let error: unknown;
    try {
      redisOption({ redis: 'redis+sentinel://:hunter22@s1,s2' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(UsageError);
    const usage = error as UsageError;
    expect(usage.exitCode).toBe(2);
    expect(usage.message).toContain('`--redis`');
    expect(usage.message).toContain('it names no master group');
    expect(usage.message).not.toContain('hunter22');
  });
});
