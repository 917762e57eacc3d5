/**
 * `errand worker`: runs the background commands runtimes dispatch through Redis. Each command runs in the
 * worker's own bash executor — its own session and process group, the same tree census and terminator,
 * the same capped output file (the spill) and, with `lifeline`, the same sidecar that stops every tree
 * when the worker dies by any means. It reads job entries from its labels' queue streams through one
 * consumer group (as many as it has free slots, in one blocking read), takes each only through the claim
 * script (its job must still be queued, not cancelled, and its runtime alive; the script acknowledges the
 * entry), streams the output into the job's bounded Redis stream, and reports the end through the finish
 * script: whichever of its end, a cancel or the lost-worker check comes first is the job's one outcome.
 * An entry read by a worker that died before claiming it stays pending in the group; another worker (or
 * this one) takes it over once it has been pending for a heartbeat TTL (`XAUTOCLAIM`): it never ran.
 *
 * Draining (`drain()`, SIGTERM): the worker stops taking jobs, lets running commands finish for up to
 * `drainTimeoutMs`, then cancels what still runs (killed, with the worker named) and exits. Nothing is
 * handed back to the queue: a command is not idempotent, so it never runs twice.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync } from 'node:fs';
import { Lifeline } from '../process/index.js';
import { BashExecutor, type ExitFacts, type ProcessHandle } from '../producers/bash/index.js';
import { RedisContext } from '../redis/redis-context.js';
import { QUEUE_GROUP } from '../redis/redis-keys.js';
import type { RedisClient } from '../redis/redis-modules.js';
import { scrubSecrets } from '../redis/redis-url.js';
import { fieldsOf, type RemoteJobData, unrunFacts } from '../redis/remote-commands.js';
import { type CancelTimer, systemClock } from '../tasks/clock.js';
import { ErrandError, type TaskOutputStream } from '../tasks/index.js';
import {
  type ErrandWorkerOptions,
  errandWorkerOptions,
  type ResolvedWorkerOptions,
} from './worker-options.js';

/** A bigger chunk is split: an entry of the output stream holds at most this many bytes. */
const MAX_ENTRY_BYTES = 64 * 1024;
/** A command still running this long after its spill file appeared gets the path on its record. */
const FILE_RECORD_DELAY_MS = 1000;
/** How long one blocking read of a queue waits for an entry before it is sent again, in ms. */
const TAKE_BLOCK_MS = 5000;

/** A queue entry as Redis returns it: its id and its flat field list. */
type QueueEntry = [string, string[]];

/** One label's queue as this worker takes from it. */
interface LabelQueue {
  readonly label: string;
  readonly key: string;
  /** Entries taken and not yet ended here (the label's share of `concurrency`). */
  active: number;
  /** Wakes the take loop when a slot frees. */
  wake: (() => void) | undefined;
  /** Whether an entry was claimed since the last trim. */
  claimed: boolean;
  reader: RedisClient | undefined;
  loop: Promise<void> | undefined;
}

interface RunningJob {
  readonly job: string;
  readonly data: RemoteJobData;
  readonly handle: ProcessHandle;
  /** Bytes of the output sent to the stream (the offset past them). */
  sent: number;
  /** Entries in the stream, oldest first: [offset past the entry, its length]. */
  readonly entries: Array<[number, number]>;
  retainedBytes: number;
  retainedFrom: number;
  flushing: Promise<void> | undefined;
  /** Ends the wait of a scheduled flush now (the command exited: what is pending goes with its end). */
  wake: (() => void) | undefined;
  /** Set once the command exited: a scheduled flush that has not sent yet leaves its bytes to the end. */
  exited: boolean;
  /** The spill file's path, once it exists; recorded on the job after `FILE_RECORD_DELAY_MS`, or with its end. */
  file: string | undefined;
  again: boolean;
  cancelled: boolean;
  stream: TaskOutputStream | undefined;
  /** The runtime its events go to: the dispatching one, until a resumed runtime re-attaches a durable job. */
  runtime: string;
}

export class WorkerNameInUseError extends ErrandError {
  constructor(name: string) {
    super(
      'WORKER_NAME_IN_USE',
      'caller',
      `Another worker named ${JSON.stringify(name)} is beating its heartbeat in this deployment; give this one another --name`,
      { context: { field: 'name', value: name } },
    );
  }
}

export class ErrandWorker {
  readonly name: string;
  readonly instance = randomBytes(6).toString('hex');
  readonly options: ResolvedWorkerOptions;
  readonly #context: RedisContext;
  readonly #executor: BashExecutor;
  readonly #lifeline: Lifeline | undefined;
  readonly #running = new Map<string, RunningJob>();
  /** Jobs between their claim and their start: whether a cancel was published for one meanwhile. */
  readonly #starting = new Map<string, boolean>();
  /** Every job this worker is taking or running, until its end is reported. */
  readonly #runs = new Map<string, Promise<void>>();
  readonly #finished: string[] = [];
  #queues: LabelQueue[] = [];
  /** Set when the shutdown begins: nothing more is taken. */
  #stopping = false;
  #subscriber: RedisClient | undefined;
  #cancelTick: CancelTimer | undefined;
  #ticking = false;
  #maintaining: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  /** Jobs taken, and how each ended, since the start. */
  readonly counts = { taken: 0, completed: 0, skipped: 0 };

  private constructor(options: ResolvedWorkerOptions, context: RedisContext, lifeline: Lifeline | undefined) {
    this.options = options;
    this.name = options.name;
    this.#context = context;
    this.#lifeline = lifeline;
    this.#executor = new BashExecutor({
      // Commands are spawned from this process without a fork where the native helper can: a fork from
      // this heap (it holds the queue clients) would block the loop that streams every other command.
      ...(lifeline ? { lifeline } : {}),
      outputDirectoryParent: options.home,
      maxOutputFileBytes: options.maxOutputFileBytes,
    });
  }

  /** Connects, claims its name (`WORKER_NAME_IN_USE` when a live worker has it) and starts taking jobs. */
  static async start(input: ErrandWorkerOptions): Promise<ErrandWorker> {
    const options = errandWorkerOptions.resolve(input);
    mkdirSync(options.home, { recursive: true, mode: 0o700 });
    const context = await RedisContext.open(options.url, options.prefix, options.logger);
    const lifeline =
      options.lifeline && process.platform === 'linux'
        ? new Lifeline({
            killGraceMs: 500,
            maxRestartsPerMinute: 5,
            clock: systemClock,
            logger: options.logger,
          })
        : undefined;
    const worker = new ErrandWorker(options, context, lifeline);
    try {
      await worker.#claimName();
      await worker.#listen();
    } catch (error) {
      await worker.#shutdown(true).catch(() => {});
      throw error;
    }
    return worker;
  }

  /** How many commands run now. */
  get runningCount(): number {
    return this.#running.size;
  }

  /**
   * Stops taking jobs, lets running commands finish for up to `drainTimeoutMs`, cancels the rest, reports
   * every end and disconnects. Idempotent.
   */
  drain(): Promise<void> {
    this.#closing ??= this.#shutdown(false);
    return this.#closing;
  }

  /** Like `drain`, without waiting: running commands are cancelled now. */
  stop(): Promise<void> {
    this.#closing ??= this.#shutdown(true);
    return this.#closing;
  }

  // ---------------------------------------------------------------- setup

  async #claimName(): Promise<void> {
    const key = this.#context.keys.workerAlive(this.name);
    const taken = await this.#context.client.set(key, this.instance, 'PX', this.options.heartbeatTtlMs, 'NX');
    if (taken !== 'OK') throw new WorkerNameInUseError(this.name);
    this.#scheduleTick();
  }

  async #listen(): Promise<void> {
    const subscriber = this.#context.connect('cancels');
    this.#subscriber = subscriber;
    subscriber.on('message', (_channel: string, job: string) => {
      if (this.#running.has(job)) void this.#checkCancel([job]);
      else if (this.#starting.has(job)) this.#starting.set(job, true);
    });
    await subscriber.subscribe(this.#context.keys.cancelChannel);
    const labels = this.options.labels.length === 0 ? ['default'] : this.options.labels;
    this.#queues = labels.map((label) => ({
      label,
      key: this.#context.keys.queue(label),
      active: 0,
      wake: undefined,
      claimed: false,
      reader: undefined,
      loop: undefined,
    }));
    for (const queue of this.#queues) await this.#ensureGroup(queue);
    for (const queue of this.#queues) {
      // A blocking read needs a connection of its own.
      queue.reader = this.#context.connect(`jobs ${queue.label}`);
      queue.loop = this.#takeLoop(queue);
    }
  }

  /** Makes the label's consumer group (from the stream's start: no entry added before it is missed). */
  async #ensureGroup(queue: LabelQueue): Promise<void> {
    try {
      await this.#context.client.xgroup('CREATE', queue.key, QUEUE_GROUP, '0', 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
    }
  }

  /**
   * Reads as many entries as the label has free slots, in one blocking read, and takes each; waits for a
   * slot when every one is busy. A Redis that lost the group (restarted empty) gets it made again.
   */
  async #takeLoop(queue: LabelQueue): Promise<void> {
    let failing = false;
    while (!this.#stopping) {
      const free = this.options.concurrency - queue.active;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          queue.wake = resolve;
        });
        queue.wake = undefined;
        continue;
      }
      let reply: Array<[string, QueueEntry[]]> | null;
      try {
        reply = (await queue.reader!.xreadgroup(
          'GROUP',
          QUEUE_GROUP,
          this.name,
          'COUNT',
          free,
          'BLOCK',
          TAKE_BLOCK_MS,
          'STREAMS',
          queue.key,
          '>',
        )) as Array<[string, QueueEntry[]]> | null;
        failing = false;
      } catch (error) {
        if (this.#stopping) return;
        if (String((error as Error).message).includes('NOGROUP')) {
          await this.#ensureGroup(queue).catch(() => {});
        } else {
          if (!failing) this.#warn('The job queue read failed; retrying', error);
          failing = true;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        continue;
      }
      for (const [, entries] of reply ?? []) for (const entry of entries) this.#take(queue, entry);
    }
  }

  /** Takes over entries another worker (or an earlier instance of this one) read and never claimed. */
  async #takeOver(queue: LabelQueue): Promise<void> {
    const free = this.options.concurrency - queue.active;
    if (free <= 0 || this.#stopping) return;
    const reply = (await this.#context.client.xautoclaim(
      queue.key,
      QUEUE_GROUP,
      this.name,
      this.options.heartbeatTtlMs,
      '0-0',
      'COUNT',
      free,
    )) as [string, QueueEntry[], string[]?];
    for (const entry of reply[1] ?? []) {
      // A deleted entry comes back without its fields (older Redis versions): nothing to run.
      if (Array.isArray(entry) && Array.isArray(entry[1])) this.#take(queue, entry);
    }
  }

  /** Runs one entry in a slot of its label. */
  #take(queue: LabelQueue, [entryId, fields]: QueueEntry): void {
    queue.active += 1;
    void this.#process(queue, entryId, fieldsOf(fields)).finally(() => {
      queue.active -= 1;
      queue.wake?.();
    });
  }

  // ---------------------------------------------------------------- one job

  async #process(queue: LabelQueue, entryId: string, fields: Record<string, string>): Promise<void> {
    let raw: unknown;
    try {
      raw = JSON.parse(fields.data ?? '');
    } catch {
      raw = undefined;
    }
    const data = checkJobData(raw);
    // Not Errand's, or read as the worker stopped: acknowledged unrun (a stopping worker's entry is left
    // pending, for another worker to take over).
    if (data === undefined || data.job !== fields.job) {
      this.counts.skipped += 1;
      await this.#context.client.xack(queue.key, QUEUE_GROUP, entryId).catch(() => {});
      return;
    }
    if (this.#stopping) return;
    // The same job's entry read again while it runs here (an entry added twice, or taken over after a
    // stall): the claim would answer `run` to this instance a second time. The job runs here: it ends once.
    const current = this.#runs.get(data.job);
    if (current !== undefined) {
      this.counts.skipped += 1;
      await this.#context.client.xack(queue.key, QUEUE_GROUP, entryId).catch(() => {});
      await current;
      return;
    }
    // Listened for from before the claim: a cancel published once the job runs here is never missed.
    this.#starting.set(data.job, false);
    const run = this.#run(queue, entryId, data).finally(() => {
      this.#starting.delete(data.job);
      this.#runs.delete(data.job);
    });
    this.#runs.set(data.job, run);
    await run;
  }

  async #run(queue: LabelQueue, entryId: string, data: RemoteJobData): Promise<void> {
    const keys = this.#context.keys;
    const now = systemClock.now();
    const claim = await this.#claim(queue, entryId, data, now);
    if (claim !== 'run') {
      this.counts.skipped += 1;
      return;
    }
    queue.claimed = true;
    this.counts.taken += 1;
    let handle: ProcessHandle;
    try {
      const resolved = this.#executor.resolve({
        command: data.command,
        cwd: data.cwd,
        env: process.env,
        id: data.job,
        ...(data.timeoutMs === null ? {} : { timeoutMs: data.timeoutMs }),
      });
      handle = this.#executor.start(resolved) as ProcessHandle;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await this.#finish(
        data,
        unrunFacts(now, systemClock.now(), { reason: 'spawn_error', error: message }),
        0,
      );
      return;
    }
    const running: RunningJob = {
      job: data.job,
      data,
      handle,
      sent: 0,
      entries: [],
      retainedBytes: 0,
      retainedFrom: 0,
      flushing: undefined,
      wake: undefined,
      exited: false,
      file: undefined,
      again: false,
      cancelled: false,
      stream: undefined,
      runtime: data.runtime,
    };
    this.#running.set(data.job, running);
    // A cancel published between the claim and now is carried out (one recorded earlier made the claim settle it).
    if (this.#starting.get(data.job) === true) void this.#checkCancel([data.job]);
    this.#starting.delete(data.job);
    try {
      if (await handle.spawned) {
        running.stream = handle.outputStream();
        running.stream?.onGrow(() => this.#scheduleFlush(running));
        // The claim told the runtime where it runs; the spill file's path goes with the end, or on the
        // record once the command has run for a while (a lost-worker check then reports it too).
        void handle.outputFileReady.then((file) => {
          if (file === undefined) return;
          running.file = file;
          setTimeout(() => {
            if (running.exited) return;
            void this.#context.client.hset(keys.job(data.job), 'file', file).catch(() => {});
          }, FILE_RECORD_DELAY_MS).unref();
        });
      }
      const facts = await handle.stopped;
      const tail = await this.#outputAtExit(running);
      await this.#finish(data, facts, running.sent, {
        file: running.file ?? '',
        tail: tail ?? '',
        retainedFrom: running.retainedFrom,
      });
    } finally {
      this.#running.delete(data.job);
      this.#forget(data.job);
    }
  }

  /**
   * The claim script, retried while Redis is away (a claim whose reply was lost is answered `run` again to
   * this instance). Gives up (`gone`) after about two minutes: the entry, unacknowledged, is taken over.
   */
  async #claim(queue: LabelQueue, entryId: string, data: RemoteJobData, now: number): Promise<string> {
    const keys = this.#context.keys;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return String(
          await this.#context.client.errandClaim(
            keys.job(data.job),
            keys.runtimeEvents(data.runtime),
            keys.runtimeAlive(data.runtime),
            queue.key,
            this.name,
            this.instance,
            data.job,
            JSON.stringify(
              unrunFacts(now, now, {
                reason: 'cancelled',
                cancelMessage: 'cancelled before a worker took it',
              }),
            ),
            JSON.stringify(
              unrunFacts(now, now, {
                lost: `its runtime ${data.runtime} was gone when worker ${this.name} took it`,
              }),
            ),
            this.options.settledRetentionMs,
            entryId,
            QUEUE_GROUP,
          ),
        );
      } catch (error) {
        if (attempt === 0) this.#warn(`Could not claim ${data.job}; retrying`, error);
        if (attempt > 600 || this.#stopping) return 'gone';
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  #scheduleFlush(running: RunningJob): void {
    if (running.flushing) {
      running.again = true;
      return;
    }
    running.flushing = (async () => {
      // Coalesce a burst of small writes into one round trip; the command's exit ends the wait at once.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.outputFlushMs);
        running.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      running.wake = undefined;
      if (running.exited) {
        running.flushing = undefined;
        return;
      }
      do {
        running.again = false;
        await this.#flushOnce(running);
      } while (running.again);
      running.flushing = undefined;
    })();
  }

  /**
   * At the command's exit: a scheduled flush stops waiting, a send under way completes, and the rest of
   * the output is returned to go with the end in one step when it fits one stream entry (else it is
   * streamed first, as while running, and nothing is returned).
   */
  async #outputAtExit(running: RunningJob): Promise<Buffer | undefined> {
    running.exited = true;
    running.wake?.();
    await running.flushing;
    const stream = running.stream;
    if (stream === undefined) return undefined;
    const cap = this.options.maxStreamBytes;
    if (stream.end - running.sent > cap) running.sent = stream.end - cap;
    if (stream.end === running.sent) return undefined;
    if (stream.end - running.sent <= MAX_ENTRY_BYTES) {
      let chunk: { from: number; bytes: Uint8Array } | undefined;
      try {
        // Read at once: four thread-pool round trips (open, stat, read, close) would delay the end.
        chunk =
          readRangeNow(stream.location, running.sent, stream.end - running.sent) ??
          (await stream.read(running.sent, MAX_ENTRY_BYTES));
      } catch {
        chunk = undefined;
      }
      const start = chunk === undefined ? running.sent : Math.max(chunk.from, running.sent);
      if (chunk !== undefined && chunk.bytes.length > 0 && start + chunk.bytes.length === stream.end) {
        const end = stream.end;
        this.#retain(running, end, chunk.bytes.length);
        running.sent = end;
        return Buffer.from(chunk.bytes);
      }
    }
    await this.#flushAll(running);
    return undefined;
  }

  /** Notes a new stream entry ending at `end`; older entries past the stream's cap are dropped. */
  #retain(running: RunningJob, end: number, length: number): void {
    running.entries.push([end, length]);
    running.retainedBytes += length;
    while (running.retainedBytes > this.options.maxStreamBytes && running.entries.length > 1) {
      const [droppedEnd, dropped] = running.entries.shift()!;
      running.retainedBytes -= dropped;
      running.retainedFrom = droppedEnd;
    }
  }

  async #flushAll(running: RunningJob): Promise<void> {
    await running.flushing;
    const stream = running.stream;
    // While Redis is away the sends fail; the rest of the output is retried for a while, then the end is
    // reported with what made it (the spill file has everything).
    for (let stalled = 0; stream !== undefined && running.sent < stream.end && stalled < 100; ) {
      const before = running.sent;
      await this.#flushOnce(running);
      if (running.sent === before) {
        stalled += 1;
        await new Promise((resolve) => setTimeout(resolve, 100));
      } else {
        stalled = 0;
      }
    }
  }

  /** Sends what the output file holds past `sent` (at most the stream's cap, newest first), then trims. */
  async #flushOnce(running: RunningJob): Promise<void> {
    const stream = running.stream;
    if (stream === undefined) return;
    const keys = this.#context.keys;
    const cap = this.options.maxStreamBytes;
    // Further behind than the stream may hold: the older bytes are never sent (the file has them).
    if (stream.end - running.sent > cap) running.sent = stream.end - cap;
    let budget = 4 * MAX_ENTRY_BYTES;
    while (running.sent < stream.end && budget > 0) {
      let chunk: { from: number; bytes: Uint8Array };
      try {
        chunk = await stream.read(running.sent, Math.min(MAX_ENTRY_BYTES, budget));
      } catch {
        return;
      }
      if (chunk.bytes.length === 0) return;
      const start = Math.max(chunk.from, running.sent);
      const end = start + chunk.bytes.length;
      budget -= chunk.bytes.length;
      const pipeline = this.#context.client.multi();
      pipeline.xadd(keys.output(running.job), `0-${end}`, 'd', Buffer.from(chunk.bytes));
      running.entries.push([end, chunk.bytes.length]);
      running.retainedBytes += chunk.bytes.length;
      while (running.retainedBytes > cap && running.entries.length > 1) {
        const [droppedEnd, length] = running.entries.shift()!;
        running.retainedBytes -= length;
        running.retainedFrom = droppedEnd;
      }
      if (running.entries.length > 0 && running.retainedFrom > 0) {
        pipeline.xtrim(keys.output(running.job), 'MINID', `0-${running.retainedFrom + 1}`);
      }
      pipeline.hset(keys.job(running.job), 'end', String(end), 'retainedFrom', String(running.retainedFrom));
      pipeline.xadd(
        keys.runtimeEvents(running.runtime),
        'MAXLEN',
        '~',
        '10000',
        '*',
        't',
        'out',
        'job',
        running.job,
        'end',
        String(end),
        'from',
        String(running.retainedFrom),
      );
      try {
        await pipeline.exec();
      } catch (error) {
        // Redis is away: the next flush (or the final one) sends it again from the same offset.
        running.entries.pop();
        running.retainedBytes -= chunk.bytes.length;
        this.#warn(`Could not stream the output of ${running.job}`, error);
        return;
      }
      running.sent = end;
    }
    if (running.sent < stream.end) running.again = true;
  }

  /** Reports the end through the finish script, retrying while Redis is away. */
  async #finish(
    data: RemoteJobData,
    facts: ExitFacts,
    end: number,
    rest: { file: string; tail: Buffer | ''; retainedFrom: number } = { file: '', tail: '', retainedFrom: 0 },
  ): Promise<void> {
    const keys = this.#context.keys;
    const payload = JSON.stringify({ ...facts, outputFile: facts.outputFile });
    for (let attempt = 0; ; attempt += 1) {
      try {
        const won = await this.#context.client.errandFinish(
          keys.job(data.job),
          keys.runtimeEvents(data.runtime),
          payload,
          this.name,
          this.options.settledRetentionMs,
          data.job,
          end,
          rest.file,
          rest.tail,
          rest.retainedFrom,
          eventCarries(rest.tail) ? '1' : '',
        );
        if (Number(won) === 1) this.counts.completed += 1;
        return;
      } catch (error) {
        if (attempt === 0) this.#warn(`Could not report the end of ${data.job}; retrying`, error);
        if (attempt > 600) return;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  /** Keeps the newest `keepOutputFiles` spill files; older ones are removed with their handles. */
  #forget(job: string): void {
    this.#finished.push(job);
    while (this.#finished.length > this.options.keepOutputFiles) {
      void this.#executor.release(this.#finished.shift()!);
    }
  }

  // ---------------------------------------------------------------- heartbeat, cancels, orphans

  #scheduleTick(): void {
    if (this.#closing !== undefined && this.#running.size === 0) return;
    this.#cancelTick = systemClock.schedule(this.options.heartbeatMs, () => {
      void this.#tick().finally(() => this.#scheduleTick());
    });
  }

  async #tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      await this.#context.client.set(
        this.#context.keys.workerAlive(this.name),
        this.instance,
        'PX',
        this.options.heartbeatTtlMs,
      );
      // The checks run beside the beat: however long they take on a loaded Redis, the next beat is on time.
      if (this.#maintaining === undefined) {
        this.#maintaining = this.#checkAll().finally(() => {
          this.#maintaining = undefined;
        });
      }
    } catch (error) {
      this.#warn('The heartbeat failed; retrying', error);
    } finally {
      this.#ticking = false;
    }
  }

  /**
   * A heartbeat's checks: the cancels and runtimes of the running jobs, then, per label, the takeover of
   * what dead readers left unclaimed and the trim of what every worker is past.
   */
  async #checkAll(): Promise<void> {
    const jobs = [...this.#running.keys()];
    if (jobs.length > 0) {
      await this.#checkCancel(jobs);
      await this.#checkRuntimes(jobs);
    }
    for (const queue of this.#queues) {
      try {
        await this.#takeOver(queue);
        // The entries claimed since the last beat leave the stream in one trim, not one delete each.
        if (queue.claimed) {
          queue.claimed = false;
          await this.#context.client.errandTrimQueue(queue.key, QUEUE_GROUP);
        }
      } catch {
        // A queue Redis lost (restarted empty) is made again by its take loop; the next beat retries.
      }
    }
  }

  /**
   * Cancels the running commands whose job records hold a cancel request, and follows a durable job to
   * the runtime that re-attached it (its output events go to that runtime's stream from now on).
   */
  async #checkCancel(jobs: string[]): Promise<void> {
    const pipeline = this.#context.client.pipeline();
    for (const job of jobs) pipeline.hmget(this.#context.keys.job(job), 'cancel', 'runtime');
    const replies = (await pipeline.exec().catch(() => null)) ?? [];
    replies.forEach(([error, value], index) => {
      const running = this.#running.get(jobs[index]!);
      if (error || !running) return;
      const [reason, runtime] = value as [string | null, string | null];
      if (typeof runtime === 'string' && runtime !== '' && runtime !== running.runtime) {
        running.runtime = runtime;
        if (running.stream !== undefined) this.#scheduleFlush(running);
      }
      if (running.cancelled || typeof reason !== 'string' || reason === '') return;
      running.cancelled = true;
      running.handle.cancel(reason);
    });
  }

  /**
   * Stops the commands of runtimes whose heartbeat expired (a dead runtime's non-durable work). Durable
   * commands run on: a runtime that resumes their session re-attaches them.
   */
  async #checkRuntimes(all: string[]): Promise<void> {
    const jobs = all.filter((job) => this.#running.get(job)?.data.durable !== true);
    if (jobs.length === 0) return;
    // One check per runtime, however many of its jobs run here.
    const runtimes = [...new Set(jobs.map((job) => this.#running.get(job)?.runtime ?? ''))];
    const pipeline = this.#context.client.pipeline();
    for (const runtime of runtimes) pipeline.exists(this.#context.keys.runtimeAlive(runtime));
    const replies = (await pipeline.exec().catch(() => null)) ?? [];
    const gone = new Set(
      runtimes.filter((_, index) => replies[index]?.[0] === null && replies[index]?.[1] === 0),
    );
    for (const job of jobs) {
      const running = this.#running.get(job);
      if (!running || running.cancelled || !gone.has(running.runtime)) continue;
      running.cancelled = true;
      running.handle.cancel(`its runtime ${running.runtime} is gone (no heartbeat)`);
    }
  }

  // ---------------------------------------------------------------- shutdown

  async #shutdown(now: boolean): Promise<void> {
    // Stop taking jobs first (an entry a blocking read returns now is left pending, for another worker to
    // take over); what runs keeps running.
    this.#stopping = true;
    for (const queue of this.#queues) {
      queue.reader?.disconnect();
      queue.wake?.();
    }
    const closing = this.#queues.map((queue) => queue.loop);
    if (now) {
      for (const running of this.#running.values()) running.handle.cancel(`worker ${this.name} stopped`);
    } else if (this.#running.size > 0) {
      const deadline = setTimeout(() => {
        for (const running of this.#running.values()) {
          if (!running.cancelled) running.handle.cancel(`worker ${this.name} drained (drainTimeoutMs)`);
        }
      }, this.options.drainTimeoutMs);
      await Promise.allSettled([...this.#running.values()].map((running) => running.handle.stopped));
      clearTimeout(deadline);
    }
    await Promise.allSettled(closing);
    // Every end reported before the heartbeat goes (else the lost check could win over a finish).
    await Promise.allSettled([...this.#runs.values()]);
    this.#cancelTick?.();
    await this.#maintaining;
    await this.#executor.dispose();
    try {
      // Only our own instance's heartbeat is removed.
      const key = this.#context.keys.workerAlive(this.name);
      if ((await this.#context.client.get(key)) === this.instance) await this.#context.client.del(key);
    } catch {
      // It expires on its own.
    }
    await this.#lifeline?.release();
    this.#subscriber?.disconnect();
    await this.#context.close();
  }

  #warn(message: string, error: unknown): void {
    const text = error instanceof Error ? error.message : String(error);
    this.options.logger.warn(`${message}: ${scrubSecrets(text, this.#context.target)}`);
  }
}

/**
 * `length` bytes of the finished output file at `path` from `offset`, read synchronously (a small read of
 * a file just written, in the page cache); undefined when the file cannot give them all.
 */
function readRangeNow(
  path: string | undefined,
  offset: number,
  length: number,
): { from: number; bytes: Uint8Array } | undefined {
  if (path === undefined || length <= 0) return undefined;
  let descriptor: number | undefined;
  try {
    descriptor = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    if (!fstatSync(descriptor).isFile()) return undefined;
    const bytes = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      const read = readSync(descriptor, bytes, filled, length - filled, offset + filled);
      if (read === 0) return undefined;
      filled += read;
    }
    return { from: offset, bytes };
  } catch {
    return undefined;
  } finally {
    if (descriptor !== undefined) closeSync(descriptor);
  }
}

/** Output this small goes in the settled event too (the events stream keeps ~10 000 entries). */
const MAX_EVENT_TAIL_BYTES = 4096;

/** Whether the output at the end is small and valid UTF-8 (events are read as text): the event carries it. */
function eventCarries(tail: Buffer | ''): boolean {
  if (tail === '' || tail.length > MAX_EVENT_TAIL_BYTES) return false;
  return Buffer.from(tail.toString('utf8'), 'utf8').equals(tail);
}

/** A job's data, checked: a job that is not Errand's is skipped, never run. */
function checkJobData(raw: unknown): RemoteJobData | undefined {
  const data = raw as Partial<RemoteJobData> | null;
  if (typeof data !== 'object' || data === null) return undefined;
  if (typeof data.job !== 'string' || typeof data.runtime !== 'string' || typeof data.taskId !== 'string')
    return undefined;
  if (typeof data.command !== 'string' || typeof data.cwd !== 'string') return undefined;
  if (data.durable !== undefined && typeof data.durable !== 'boolean') return undefined;
  if (
    data.timeoutMs !== null &&
    (typeof data.timeoutMs !== 'number' || !Number.isSafeInteger(data.timeoutMs))
  ) {
    return undefined;
  }
  return data as RemoteJobData;
}

export function startErrandWorker(options: ErrandWorkerOptions): Promise<ErrandWorker> {
  return ErrandWorker.start(options);
}
