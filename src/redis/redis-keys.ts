/**
 * Every key Errand writes in Redis, under one deployment prefix: runtimes and workers of a deployment
 * share the prefix, and a worker never reads a job of another prefix (its queues live under it too).
 *
 * - `<p>:ids:<kind>`            counter of task ids per kind (blocks are reserved by INCRBY)
 * - `<p>:job:<job>`             one remote command: state, worker, cancel request, exit facts, output end
 * - `<p>:out:<job>`             its output, a stream of chunks whose entry id `0-<end>` is the offset past them
 *                                 (expires with the record once the job settled)
 * - `<p>:rt:<runtime>:events`   what happened to a runtime's jobs (started, output, settled), read in order;
 *                                 expires `settledRetentionMs` after the runtime's last beat
 * - `<p>:rt:<runtime>:alive`    the runtime's heartbeat (expires when it stops beating)
 * - `<p>:worker:<name>:alive`   a worker's heartbeat, holding its instance id
 * - `<p>:cancel`                the channel cancels are published on
 * - `<p>:q:<label>`             a label's queue: a stream of job entries (`job`, `data`), read by the
 *                                 label's workers through one consumer group (`workers`); an entry is
 *                                 acknowledged by the claim script and trimmed once every worker is past it
 */

/** Names a worker, a label or a deployment prefix may have: letters, digits, `_ . -`, 1 to 64 characters. */
export const REDIS_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

export class RedisKeys {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  ids(kind: string): string {
    return `${this.prefix}:ids:${kind}`;
  }

  job(job: string): string {
    return `${this.prefix}:job:${job}`;
  }

  output(job: string): string {
    return `${this.prefix}:out:${job}`;
  }

  runtimeEvents(runtime: string): string {
    return `${this.prefix}:rt:${runtime}:events`;
  }

  runtimeAlive(runtime: string): string {
    return `${this.prefix}:rt:${runtime}:alive`;
  }

  workerAlive(worker: string): string {
    return `${this.prefix}:worker:${worker}:alive`;
  }

  get cancelChannel(): string {
    return `${this.prefix}:cancel`;
  }

  /** The queue stream of a label. */
  queue(label: string): string {
    return `${this.prefix}:q:${label}`;
  }
}

/** The consumer group every worker of a label reads its queue stream through. */
export const QUEUE_GROUP = 'workers';
