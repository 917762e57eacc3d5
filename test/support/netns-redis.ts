/**
 * Redis on the hosts of a lab (`netns-hosts.ts`): a `redis-server` listening on its host's address (an
 * append-only file in the host's own `/tmp`), a replica of another, and `redis-server --sentinel`
 * processes watching a primary — what a deployment with failover runs, one program per host.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HostProcess, LabHost } from './netns-hosts.js';

export const REDIS_PORT = 6379;
export const SENTINEL_PORT = 26379;

export interface LabRedis {
  readonly host: LabHost;
  readonly process: HostProcess;
  readonly url: string;
}

/** `redis-server` on `host`, optionally a replica of `replicaOf`; resolves once it accepts connections. */
export async function startLabRedis(
  server: string,
  host: LabHost,
  options: { readonly replicaOf?: LabHost } = {},
): Promise<LabRedis> {
  const process = host.spawn(server, [
    '--port',
    String(REDIS_PORT),
    '--bind',
    `${host.address} 127.0.0.1`,
    '--dir',
    '/tmp',
    '--save',
    '',
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--protected-mode',
    'no',
    '--loglevel',
    'notice',
    ...(options.replicaOf ? ['--replicaof', options.replicaOf.address, String(REDIS_PORT)] : []),
  ]);
  await process.waitFor(/Ready to accept connections/, 30_000);
  if (options.replicaOf) await process.waitFor(/MASTER <-> REPLICA sync: Finished with success/, 30_000);
  return { host, process, url: `redis://${host.address}:${REDIS_PORT}` };
}

export interface LabSentinel {
  readonly host: LabHost;
  readonly process: HostProcess;
  readonly address: string;
}

/**
 * A sentinel on `host` watching `primary` as `masterName` with `quorum`; it declares the primary down
 * after `downAfterMs` without an answer. Its configuration file (sentinels rewrite it) is in the host's
 * `/tmp`. Resolves once it monitors the primary.
 */
export async function startLabSentinel(
  server: string,
  host: LabHost,
  primary: LabHost,
  options: { readonly masterName: string; readonly quorum: number; readonly downAfterMs: number },
): Promise<LabSentinel> {
  writeFileSync(
    join(host.tmp, 'sentinel.conf'),
    [
      `port ${SENTINEL_PORT}`,
      `bind ${host.address} 127.0.0.1`,
      'protected-mode no',
      'dir /tmp',
      `sentinel announce-ip ${host.address}`,
      `sentinel monitor ${options.masterName} ${primary.address} ${REDIS_PORT} ${options.quorum}`,
      `sentinel down-after-milliseconds ${options.masterName} ${options.downAfterMs}`,
      `sentinel failover-timeout ${options.masterName} ${Math.max(10_000, options.downAfterMs * 4)}`,
      `sentinel parallel-syncs ${options.masterName} 1`,
      '',
    ].join('\n'),
  );
  const process = host.spawn(server, ['/tmp/sentinel.conf', '--sentinel']);
  await process.waitFor(/\+monitor master/, 30_000);
  return { host, process, address: `${host.address}:${SENTINEL_PORT}` };
}
