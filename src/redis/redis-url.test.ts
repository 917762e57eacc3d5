/** Redis URLs: only redis:// and rediss://, and never a credential in a message. */
import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { errandRuntimeOptions } from '../host/errand-runtime-options.js';
import { scriptedModel } from '../testing/index.js';
import { errandWorkerOptions } from '../worker/worker-options.js';
import { redisProviderOptions } from './redis-options.js';
import { parseRedisUrl, redactRedisUrl, scrubSecrets } from './redis-url.js';

describe('Redis URLs', () => {
  it('accepts redis:// and rediss:// with credentials, and shows them redacted', () => {
    const target = parseRedisUrl('rediss://errand:s3cret-pass@cache.internal:6380/2');
    expect(target.tls).toBe(true);
    expect(target.redacted).toBe('rediss://***:***@cache.internal:6380/2');
    expect(target.redacted).not.toContain('s3cret');
    expect(parseRedisUrl('redis://127.0.0.1:6379').redacted).toBe('redis://127.0.0.1:6379');
  });

  it('scrubs the password, the user and the whole URL from any text', () => {
    const target = parseRedisUrl('redis://errand:s3cret-pass@cache.internal:6379');
    const text = scrubSecrets(
      'connect to redis://errand:s3cret-pass@cache.internal:6379 failed (WRONGPASS s3cret-pass)',
      target,
    );
    expect(text).not.toContain('s3cret-pass');
    expect(text).not.toContain('errand:');
  });

  it.each([
    ['http://user:hunter22@host:6379'],
    ['unix:///tmp/redis.sock'],
    ['not a url at all hunter22'],
    [''],
  ])('refuses %j with INVALID_ARGUMENT naming the field, never the password', (url) => {
    const error = thrown(() => parseRedisUrl(url));
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', context: { field: 'redis.url' } });
    expect(String((error as Error).message)).not.toContain('hunter22');
  });

  it('hides a string that is not a URL entirely', () => {
    expect(redactRedisUrl('::::hunter22')).not.toContain('hunter22');
  });

  it('checks the provider, runtime and worker options: a bad URL is named redacted, every bound enforced', () => {
    const bad = thrown(() =>
      errandRuntimeOptions.resolve({ model: scriptedModel(), redis: { url: 'http://a:hunter22@b' } }),
    );
    expect(bad).toMatchObject({ code: 'INVALID_ARGUMENT', context: { field: 'redis.url' } });
    expect(String((bad as Error).message)).not.toContain('hunter22');
    expect(thrown(() => redisProviderOptions.resolve({ url: 'redis://h', prefix: 'a b' }))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { field: 'prefix' },
    });
    expect(
      thrown(() =>
        redisProviderOptions.resolve({ url: 'redis://h', heartbeatMs: 1000, heartbeatTtlMs: 1000 }),
      ),
    ).toMatchObject({ code: 'INVALID_ARGUMENT', context: { field: 'heartbeatTtlMs' } });
    expect(thrown(() => redisProviderOptions.resolve({ url: 'redis://h', colour: 1 }))).toMatchObject({
      code: 'UNKNOWN_OPTION',
    });
    expect(
      thrown(() => errandWorkerOptions.resolve({ url: 'redis://h', labels: ['gpu', 'no/slash'] })),
    ).toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { field: 'labels[1]' },
    });
    expect(redisProviderOptions.resolve({ url: 'redis://h' })).toMatchObject({
      prefix: 'errand',
      label: 'default',
      heartbeatMs: 1000,
      heartbeatTtlMs: 5000,
      maxStreamBytes: 1024 * 1024,
    });
  });
});
