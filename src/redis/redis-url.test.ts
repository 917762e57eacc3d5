/** Redis URLs: only redis://, rediss:// and redis+sentinel://, and never a credential in a message. */
import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { errandRuntimeOptions } from '../host/errand-runtime-options.js';
import { scriptedModel } from '../testing/index.js';
import { errandWorkerOptions } from '../worker/worker-options.js';
import { sentinelOptions } from './redis-modules.js';
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

  it('accepts redis+sentinel:// with sentinels, a master group, a database and credentials, shown redacted', () => {
    const target = parseRedisUrl(
      'redis+sentinel://errand:s3cret-pass@10.0.0.1:26379,10.0.0.2,[::1]:26380/main/2',
    );
    expect(target.sentinel).toEqual({
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '10.0.0.2', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      name: 'main',
      username: 'errand',
      password: 's3cret-pass',
      db: 2,
    });
    expect(target.redacted).toBe('redis+sentinel://***:***@10.0.0.1:26379,10.0.0.2,[::1]:26380/main/2');
    expect(redactRedisUrl('redis+sentinel://:p4ssword@h/m')).toBe('redis+sentinel://:***@h/m');
    expect(scrubSecrets('WRONGPASS s3cret-pass for errand', target)).not.toContain('s3cret-pass');
    expect(sentinelOptions(target)).toMatchObject({
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '10.0.0.2', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      name: 'main',
      password: 's3cret-pass',
      db: 2,
    });
    expect(sentinelOptions(target)).not.toHaveProperty('failoverDetector');
    expect(parseRedisUrl('redis+sentinel://s1:26379/mymaster').sentinel).toEqual({
      sentinels: [{ host: 's1', port: 26379 }],
      name: 'mymaster',
    });
  });

  it.each([
    ['redis+sentinel://u:hunter22@h1:26379', 'names no master group'],
    ['redis+sentinel://u:hunter22@/main', 'names no sentinel'],
    ['redis+sentinel://u:hunter22@h1:0/main', 'no port from 1 to 65535'],
    ['redis+sentinel://u:hunter22@h1:99999/main', 'no port from 1 to 65535'],
    ['redis+sentinel://u:hunter22@h1:,h2/main', 'no port from 1 to 65535'],
    ['redis+sentinel://u:hunter22@h_1/main', 'is not a host[:port]'],
    ['redis+sentinel://u:hunter22@h1,,h2/main', 'is not a host[:port]'],
    ['redis+sentinel://u:hunter22@h1/ma in', 'master name'],
    ['redis+sentinel://u:hunter22@h1/main/x', 'only a database number'],
    ['redis+sentinel://u:hunter22@h1/main/1/2', 'only a database number'],
    ['redis+sentinel://u:hunter22@h1/main?role=slave', 'query strings'],
    ['rediss+sentinel://u:hunter22@h1/main', 'TLS to sentinels is not supported'],
  ])(
    'refuses %j with REDIS_SENTINEL_URL_INVALID naming the field and the problem, never the password',
    (url, problem) => {
      const error = thrown(() => parseRedisUrl(url, '--redis'));
      expect(error).toMatchObject({ code: 'REDIS_SENTINEL_URL_INVALID', context: { field: '--redis' } });
      expect(String((error as Error).message)).toContain(problem);
      expect(String((error as Error).message)).toContain('--redis');
      expect(String((error as Error).message)).not.toContain('hunter22');
      expect(JSON.stringify((error as { context: unknown }).context)).not.toContain('hunter22');
    },
  );

  it('refuses a bad sentinel URL in the runtime and worker options with the same code', () => {
    expect(
      thrown(() =>
        errandRuntimeOptions.resolve({ model: scriptedModel(), redis: { url: 'redis+sentinel://h1' } }),
      ),
    ).toMatchObject({ code: 'REDIS_SENTINEL_URL_INVALID', context: { field: 'redis.url' } });
    expect(thrown(() => errandWorkerOptions.resolve({ url: 'redis+sentinel://h1:x/m' }))).toMatchObject({
      code: 'REDIS_SENTINEL_URL_INVALID',
      context: { field: 'url' },
    });
    expect(errandWorkerOptions.resolve({ url: 'redis+sentinel://h1,h2,h3/main' }).url).toBe(
      'redis+sentinel://h1,h2,h3/main',
    );
  });
});
