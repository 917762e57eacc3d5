/**
 * The runtime's side of remote bash commands: it dispatches a background command as a job — its record
 * and an entry on its label's queue stream, in one script call — follows what its workers report on the runtime's events
 * stream (started, output, settled), mirrors each command's output into the same in-memory window a
 * local command has, and beats the runtime's heartbeat. Every `heartbeatMs` it also reads the record of
 * each command it still waits for, so an event lost to a reconnect is made up for, and settles `lost`
 * (through the guarded script) every command whose worker stopped beating.
 */
import { randomBytes } from 'node:crypto';
import {
  type CommandHandle,
  type ExitFacts,
  type RemoteAttachment,
  RemoteCommandHandle,
  type RemoteCommandLink,
  type RemoteCommands,
  type RemoteStartOptions,
  type ResolvedCommand,
} from '../producers/bash/index.js';
import type { CancelTimer, Clock } from '../tasks/clock.js';
import type { Logger, TaskId, TaskOutputChunk } from '../tasks/index.js';
import type { RedisContext } from './redis-context.js';
import type { RedisKeys } from './redis-keys.js';
import type { RedisClient } from './redis-modules.js';
import { scrubSecrets } from './redis-url.js';

/** What a job carries to its worker (the `data` of its queue entry, as JSON). */
export interface RemoteJobData {
  readonly job: string;
  readonly taskId: string;
  readonly runtime: string;
  readonly command: string;
  readonly cwd: string;
  readonly timeoutMs: number | null;
  /** Runs on when its runtime's heartbeat expires, to be re-attached on resume. Absent: false. */
  readonly durable?: boolean;
}

export interface RemoteCommandsOptions {
  readonly context: RedisContext;
  readonly label: string;
  readonly heartbeatMs: number;
  readonly heartbeatTtlMs: number;
  readonly settledRetentionMs: number;
  /** The mirror's capacity: the newest output bytes kept in memory (the executor's `maxBufferedBytes`). */
  readonly maxBufferedBytes: number;
  /** The most one consuming read returns (the executor's `maxReadBytes`). */
  readonly maxReadBytes: number;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** Exit facts with nothing run: the base of what the runtime itself decides (a cancel, a loss). */
export function unrunFacts(startedAt: number, endedAt: number, patch: Partial<ExitFacts>): ExitFacts {
  return {
    reason: 'completed',
    exitCode: null,
    signal: null,
    pid: null,
    outputBytes: 0,
    outputFile: null,
    escalated: false,
    signalledProcesses: 0,
    survivors: [],
    startedAt,
    endedAt,
    error: null,
    errorCode: null,
    cancelMessage: null,
    timeoutMs: null,
    outputLimitBytes: null,
    ...patch,
  };
}

const OUTPUT_PAGE_ENTRIES = 256;

/** The offset past a stream entry, from its id `0-<end>`. */
function entryEnd(id: Buffer | string): number {
  const text = id.toString();
  return Number(text.slice(text.indexOf('-') + 1));
}

/** One page of a job's output stream from `offset`: `[start, bytes]` runs, oldest first. */
async function readEntries(
  client: RedisClient,
  key: string,
  offset: number,
  count: number,
): Promise<Array<{ start: number; bytes: Buffer }>> {
  const entries = (await client.xrangeBuffer(key, `(0-${offset}`, '+', 'COUNT', count)) as Array<
    [Buffer, Buffer[]]
  >;
  return entries.map(([id, fields]) => {
    const bytes = fields[1] ?? Buffer.alloc(0);
    return { start: entryEnd(id) - bytes.length, bytes };
  });
}

/**
 * Up to `limit` bytes of a job's output stream (at `key`) from `offset`; a later `from` says the bytes
 * before it were dropped by the stream's cap. A Redis that cannot be read ends the range where it is.
 */
export async function readStreamRange(
  client: RedisClient,
  key: string,
  offset: number,
  limit: number,
): Promise<TaskOutputChunk> {
  if (limit <= 0) return { from: offset, bytes: new Uint8Array(0) };
  const parts: Buffer[] = [];
  let from = offset;
  let next = offset;
  let size = 0;
  while (size < limit) {
    const page = await readEntries(client, key, next, RANGE_PAGE_ENTRIES).catch(() => []);
    if (page.length === 0) break;
    for (const entry of page) {
      if (size >= limit) break;
      if (parts.length === 0 && entry.start > offset) from = entry.start;
      const skip = Math.max(0, next - entry.start);
      const piece = entry.bytes.subarray(skip, skip + (limit - size));
      parts.push(piece);
      size += piece.length;
      next = entry.start + skip + piece.length;
    }
    if (page.length < RANGE_PAGE_ENTRIES) break;
  }
  return { from, bytes: Buffer.concat(parts) };
}

/** Stream entries one range read asks for at a time. */
const RANGE_PAGE_ENTRIES = 64;

export class RemoteCommandDispatcher implements RemoteCommands, RemoteCommandLink {
  readonly runtimeId = randomBytes(6).toString('hex');
  readonly #options: RemoteCommandsOptions;
  readonly #context: RedisContext;
  readonly #keys: RedisKeys;
  readonly #eventsKey: string;
  readonly #queueKey: string;
  readonly #handles = new Map<string, RemoteCommandHandle>();
  #reader: RedisClient | undefined;
  #lastEventId = '0-0';
  #closed = false;
  #reading: Promise<void> | undefined;
  #cancelTick: CancelTimer | undefined;
  #ticking = false;
  /** A failing check is warned about once, until one succeeds again. */
  #tickFailing = false;

  private constructor(options: RemoteCommandsOptions) {
    this.#options = options;
    this.#context = options.context;
    this.#keys = options.context.keys;
    this.#eventsKey = this.#keys.runtimeEvents(this.runtimeId);
    this.#queueKey = this.#keys.queue(options.label);
  }

  /** Starts following the runtime's events and beating its heartbeat; resolves once the first beat is in. */
  static async start(options: RemoteCommandsOptions): Promise<RemoteCommandDispatcher> {
    const dispatcher = new RemoteCommandDispatcher(options);
    await dispatcher.#beat();
    dispatcher.#reader = options.context.connect('events');
    dispatcher.#reading = dispatcher.#readEvents();
    dispatcher.#scheduleTick();
    return dispatcher;
  }

  get context(): RedisContext {
    return this.#context;
  }

  get eventsKey(): string {
    return this.#eventsKey;
  }

  start(resolved: ResolvedCommand, taskId: TaskId, options: RemoteStartOptions = {}): CommandHandle {
    const job = `${this.runtimeId}.${taskId}`;
    const durable = options.durable === true;
    const handle = new RemoteCommandHandle(this, job, resolved, this.#options, { durable });
    this.#handles.set(job, handle);
    const data: RemoteJobData = {
      job,
      taskId,
      runtime: this.runtimeId,
      command: resolved.command,
      cwd: resolved.cwd,
      timeoutMs: resolved.timeoutMs ?? null,
      ...(durable ? { durable: true } : {}),
    };
    handle.dispatched = this.#dispatch(handle, data);
    return handle;
  }

  /**
   * Re-attaches a durable command an earlier runtime dispatched (its session is being resumed): its job's
   * events come to this runtime from now on, output is mirrored from the model's read offset, and an end
   * that happened while no runtime ran settles the handle at once.
   */
  attach(attachment: RemoteAttachment): CommandHandle {
    const handle = new RemoteCommandHandle(
      this,
      attachment.job,
      { command: attachment.command, cwd: attachment.cwd } as ResolvedCommand,
      this.#options,
      { durable: true, startedAt: attachment.startedAt, readOffset: attachment.readOffset },
    );
    this.#handles.set(attachment.job, handle);
    if (attachment.worker) handle.markStarted(attachment.worker, undefined);
    handle.dispatched = this.#adopt(handle);
    return handle;
  }

  get(id: string): CommandHandle | undefined {
    return this.#handles.get(id);
  }

  async release(id: string): Promise<void> {
    const handle = this.#handles.get(id);
    if (!handle) return;
    this.#handles.delete(id);
    await handle.stopped;
    try {
      await this.#context.client.del(this.#keys.job(id), this.#keys.output(id));
    } catch {
      // The record expires on its own (`settledRetentionMs`).
    }
  }

  /** Stops following events and beating (its running commands are the task service's to stop first). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#cancelTick?.();
    try {
      await this.#context.client.del(this.#keys.runtimeAlive(this.runtimeId), this.#eventsKey);
    } catch {
      // Expires on its own.
    }
    this.#reader?.disconnect();
    await this.#reading?.catch(() => {});
  }

  // ---------------------------------------------------------------- what a handle asks for

  async cancelJob(handle: RemoteCommandHandle, reason: string): Promise<void> {
    await handle.dispatched;
    const requestedAt = this.#options.clock.now();
    let warned = false;
    const facts = unrunFacts(handle.startedAt, this.#options.clock.now(), {
      reason: 'cancelled',
      cancelMessage: reason,
    });
    for (;;) {
      try {
        const result = await this.#context.client.errandCancel(
          this.#keys.job(handle.id),
          this.#eventsKey,
          reason,
          JSON.stringify(facts),
          this.#options.settledRetentionMs,
          handle.id,
          this.#keys.cancelChannel,
        );
        if (result === 'settled' || result === 'ended') await this.#collect(handle);
        else if (result === 'gone') handle.settle(this.#goneFacts(handle));
        return;
      } catch (error) {
        // Redis is away: the cancel is retried until it is recorded (or the command settled meanwhile),
        // for at most twice the heartbeat TTL — by then the worker stops the command on its own (this
        // runtime's heartbeat has expired), and the task is settled lost here: its end cannot be known.
        if (this.#closed || handle.exit !== undefined) return;
        if (this.#options.clock.now() - requestedAt > 2 * this.#options.heartbeatTtlMs) {
          handle.settle(
            unrunFacts(handle.startedAt, this.#options.clock.now(), {
              lost: `its cancel could not reach Redis for ${2 * this.#options.heartbeatTtlMs} ms; its worker stops it once this runtime's heartbeat expires`,
              outputBytes: handle.mirrorEnd,
            }),
          );
          return;
        }
        if (!warned) this.#warn(`Could not record the cancel of ${handle.taskLabel}; retrying`, error);
        warned = true;
        await new Promise((resolve) => setTimeout(resolve, this.#options.heartbeatMs));
      }
    }
  }

  async readOutputRange(
    handle: RemoteCommandHandle,
    offset: number,
    maxBytes: number,
  ): Promise<TaskOutputChunk> {
    const limit = Math.min(maxBytes, handle.streamEnd - offset);
    return readStreamRange(this.#context.client, this.#keys.output(handle.id), offset, limit);
  }

  // ---------------------------------------------------------------- internals

  /** Points the job's events at this runtime, then catches up with what it missed (output, its end). */
  async #adopt(handle: RemoteCommandHandle): Promise<boolean> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        const [state, worker, end, retainedFrom] = await this.#context.client.errandAdopt(
          this.#keys.job(handle.id),
          this.#eventsKey,
          this.runtimeId,
        );
        if (state === null || state === undefined) {
          handle.settle(this.#goneFacts(handle));
          return false;
        }
        handle.heardAt = this.#options.clock.now();
        if (worker) handle.markStarted(worker, undefined);
        handle.streamRetainedFrom = Math.max(handle.streamRetainedFrom, Number(retainedFrom ?? 0));
        if (state === 'queued' || state === 'running') void this.#follow(handle, Number(end ?? 0));
        else void this.#collect(handle);
        return true;
      } catch (error) {
        // Redis is away: the re-attachment is retried until it is heard or this runtime closes.
        if (this.#closed) return false;
        if (attempt === 0) this.#warn(`Could not re-attach ${handle.taskLabel}; retrying`, error);
        await new Promise((resolve) => setTimeout(resolve, this.#options.heartbeatMs));
      }
    }
  }

  async #dispatch(handle: RemoteCommandHandle, data: RemoteJobData): Promise<boolean> {
    const client = this.#context.client;
    try {
      // The record and the queue entry in one step: three Redis commands in all.
      await client.errandDispatch(
        this.#keys.job(handle.id),
        this.#queueKey,
        data.taskId,
        this.runtimeId,
        data.command.slice(0, 4096),
        data.durable === true ? '1' : '',
        handle.id,
        JSON.stringify(data),
      );
      return true;
    } catch (error) {
      const message = this.#scrub(error);
      this.#warn(`Could not dispatch ${handle.taskLabel} to a worker`, error);
      // A record that made it stays settled, so no worker runs what was never queued for sure.
      await client
        .errandCancel(
          this.#keys.job(handle.id),
          this.#eventsKey,
          'the dispatch failed',
          '{}',
          this.#options.settledRetentionMs,
          handle.id,
          this.#keys.cancelChannel,
        )
        .catch(() => {});
      handle.settle(
        unrunFacts(handle.startedAt, this.#options.clock.now(), {
          reason: 'spawn_error',
          error: `could not dispatch it to a worker through Redis: ${message}`,
          errorCode: 'EREDIS',
        }),
      );
      return false;
    }
  }

  async #readEvents(): Promise<void> {
    const reader = this.#reader!;
    while (!this.#closed) {
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        reply = (await reader.xread(
          'COUNT',
          1000,
          'BLOCK',
          1000,
          'STREAMS',
          this.#eventsKey,
          this.#lastEventId,
        )) as Array<[string, Array<[string, string[]]>]> | null;
      } catch {
        if (this.#closed) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          this.#lastEventId = id;
          this.#onEvent(fieldsOf(fields));
        }
      }
    }
  }

  #onEvent(event: Record<string, string>): void {
    const handle = event.job === undefined ? undefined : this.#handles.get(event.job);
    if (!handle) return;
    handle.heardAt = this.#options.clock.now();
    switch (event.t) {
      case 'started':
        handle.markStarted(event.worker ?? '?', event.file);
        break;
      case 'out':
        handle.streamRetainedFrom = Math.max(handle.streamRetainedFrom, Number(event.from ?? 0));
        void this.#follow(handle, Number(event.end ?? 0));
        break;
      case 'settled':
        if (event.tail !== undefined) {
          // The output's last bytes came with the end: mirrored now, unless something before them is missing.
          const bytes = Buffer.from(event.tail, 'utf8');
          const start = Number(event.end ?? 0) - bytes.length;
          if (start <= handle.mirrorEnd) handle.mirror(start, bytes);
        }
        // Events written before the settled event carried the outcome have only the job: read the record.
        void this.#collect(handle, event.facts === undefined ? undefined : event);
        break;
    }
  }

  /** Mirrors the job's output up to at least `end` (one fetch at a time per handle). */
  #follow(handle: RemoteCommandHandle, end: number): Promise<void> {
    handle.wantedEnd = Math.max(handle.wantedEnd, end);
    if (handle.mirrorEnd >= handle.wantedEnd) return handle.following ?? Promise.resolve();
    handle.following ??= (async () => {
      // Never finishes synchronously: the assignment above happens first.
      await undefined;
      try {
        while (handle.mirrorEnd < handle.wantedEnd) {
          const page = await readEntries(
            this.#context.client,
            this.#keys.output(handle.id),
            handle.mirrorEnd,
            OUTPUT_PAGE_ENTRIES,
          );
          if (page.length === 0) break;
          for (const entry of page) handle.mirror(entry.start, entry.bytes);
        }
      } catch (error) {
        this.#warn(`Could not read the output of ${handle.taskLabel}`, error);
      } finally {
        handle.following = undefined;
      }
    })();
    return handle.following;
  }

  /**
   * Settles the handle from its job's outcome — the `settled` event's copy of the record when given,
   * else the record read — once the rest of its output is mirrored.
   */
  async #collect(handle: RemoteCommandHandle, settled?: Record<string, string>): Promise<void> {
    if (handle.exit !== undefined || handle.collecting) return;
    handle.collecting = true;
    try {
      const record = settled ?? (await this.#context.client.hgetall(this.#keys.job(handle.id)));
      if (record.state === undefined) {
        handle.settle(this.#goneFacts(handle));
        return;
      }
      if (record.state === 'queued' || record.state === 'running') return;
      const end = Number(record.end ?? 0);
      handle.streamRetainedFrom = Math.max(handle.streamRetainedFrom, Number(record.retainedFrom ?? 0));
      await handle.following;
      await this.#follow(handle, end);
      if (record.worker) handle.markStarted(record.worker, record.file || undefined);
      const facts = parseFacts(record.facts, handle, this.#options.clock.now());
      handle.settle({
        ...facts,
        outputBytes: Math.max(facts.outputBytes, handle.mirrorEnd),
        outputFile: null,
      });
    } catch (error) {
      this.#warn(`Could not read how ${handle.taskLabel} ended; the next check retries`, error);
    } finally {
      handle.collecting = false;
    }
  }

  #goneFacts(handle: RemoteCommandHandle): ExitFacts {
    return unrunFacts(handle.startedAt, this.#options.clock.now(), {
      lost: `Redis no longer holds the record of its job (${handle.id}): its end cannot be known`,
      outputBytes: handle.mirrorEnd,
    });
  }

  /**
   * The heartbeat, and the expiry of this runtime's events stream: `settledRetentionMs` after the last beat
   * (at least two heartbeat TTLs, so it never lapses between beats), so the stream of a runtime that died
   * does not stay in Redis for good (a runtime that closes deletes it).
   */
  async #beat(): Promise<void> {
    const results = await this.#context.client
      .multi()
      .set(this.#keys.runtimeAlive(this.runtimeId), '1', 'PX', this.#options.heartbeatTtlMs)
      .pexpire(this.#eventsKey, Math.max(this.#options.settledRetentionMs, 2 * this.#options.heartbeatTtlMs))
      .exec();
    const failure = results?.find(([error]) => error !== null)?.[0];
    if (failure) throw failure;
  }

  #scheduleTick(): void {
    if (this.#closed) return;
    this.#cancelTick = this.#options.clock.schedule(this.#options.heartbeatMs, () => {
      void this.#tick().finally(() => this.#scheduleTick());
    });
  }

  /** The heartbeat, and the check of every command still waited for. */
  async #tick(): Promise<void> {
    if (this.#ticking || this.#closed) return;
    this.#ticking = true;
    try {
      await this.#beat();
      const now = this.#options.clock.now();
      const live = [...this.#handles.values()].filter(
        (handle) => handle.exit === undefined && !handle.undispatched,
      );
      // Running on a known worker: its heartbeat decides. Every command not heard of for a heartbeat TTL
      // has its record read (an event lost to a reconnect, a record Redis lost).
      const byWorker = new Map<string, RemoteCommandHandle[]>();
      for (const handle of live) {
        if (handle.worker === undefined) continue;
        const list = byWorker.get(handle.worker) ?? [];
        list.push(handle);
        byWorker.set(handle.worker, list);
      }
      for (const [worker, handles] of byWorker) await this.#checkWorker(worker, handles);
      const waiting = live.filter((handle) => now - handle.heardAt >= this.#options.heartbeatTtlMs);
      if (waiting.length === 0) {
        this.#tickFailing = false;
        return;
      }
      const pipeline = this.#context.client.pipeline();
      for (const handle of waiting) pipeline.hmget(this.#keys.job(handle.id), 'state', 'worker', 'end');
      const replies = (await pipeline.exec()) ?? [];
      replies.forEach(([error, value], index) => {
        const handle = waiting[index]!;
        if (error) return;
        handle.heardAt = now;
        const [state, worker, end] = value as [string | null, string | null, string | null];
        if (state === null) {
          // Dispatched (the record was written before the job) and gone: Redis lost it.
          if (handle.dispatchedOk) void this.#collect(handle);
        } else if (state !== 'queued' && state !== 'running') {
          void this.#collect(handle);
        } else if (state === 'running' && worker) {
          handle.markStarted(worker, undefined);
          void this.#follow(handle, Number(end ?? 0));
        }
      });
      this.#tickFailing = false;
    } catch (error) {
      if (!this.#closed && !this.#tickFailing)
        this.#warn('The remote commands check failed; the next ones retry', error);
      this.#tickFailing = true;
    } finally {
      this.#ticking = false;
    }
  }

  /** Settles `lost` the running jobs of a worker whose heartbeat is gone (the script checks it again). */
  async #checkWorker(worker: string, handles: RemoteCommandHandle[]): Promise<void> {
    const alive = await this.#context.client.exists(this.#keys.workerAlive(worker));
    if (alive === 1) return;
    for (const handle of handles) {
      const facts = unrunFacts(handle.startedAt, this.#options.clock.now(), {
        lost: `its worker ${worker} is gone: no heartbeat for ${this.#options.heartbeatTtlMs} ms; the command is not run again`,
        outputBytes: handle.mirrorEnd,
      });
      const won = await this.#context.client.errandLost(
        this.#keys.job(handle.id),
        this.#eventsKey,
        this.#keys.workerAlive(worker),
        JSON.stringify(facts),
        this.#options.settledRetentionMs,
        handle.id,
      );
      if (Number(won) === 1) await this.#collect(handle);
    }
  }

  #scrub(error: unknown): string {
    return scrubSecrets(error instanceof Error ? error.message : String(error), this.#context.target);
  }

  #warn(message: string, error: unknown): void {
    this.#options.logger.warn(`${message}: ${this.#scrub(error)}`);
  }
}

/** A stream entry's flat `[field, value, …]` list as a record. */
export function fieldsOf(fields: string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let index = 0; index + 1 < fields.length; index += 2) record[fields[index]!] = fields[index + 1]!;
  return record;
}

function parseFacts(text: string | undefined, handle: RemoteCommandHandle, now: number): ExitFacts {
  try {
    const facts = JSON.parse(text ?? '') as ExitFacts;
    if (typeof facts === 'object' && facts !== null && typeof facts.reason === 'string') {
      return unrunFacts(handle.startedAt, now, facts);
    }
  } catch {
    // Below.
  }
  return unrunFacts(handle.startedAt, now, {
    lost: `its job's record holds no readable exit facts (${handle.id})`,
  });
}
