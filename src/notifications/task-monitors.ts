/**
 * Monitors: matching output lines of a running task, turned into notifications for its owner. Each
 * monitor reads the task through an observation cursor of its own (so it never moves the model's read),
 * splits the output into lines, and hands what matched to the owner's delivery policy — coalesced (lines
 * that arrive together go in one notification), rate-limited (at most `maxNotificationsPerMinute`) and
 * bounded in total (the monitor's `max`), with a count of the lines it did not show. It ends with the
 * task and never says how the task ended: that is the task's own notification.
 */
import {
  type CancelTimer,
  type Clock,
  describeIntegerRange,
  ErrandError,
  InvalidArgumentError,
  isTerminalStatus,
  type Logger,
  type OutputCursor,
  type Owner,
  systemClock,
  type TaskId,
  TaskNotRunningError,
  type TaskService,
} from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';
import { shortenText, stripTerminalEscapes } from '../text/index.js';
import type { DeliveryOutcome } from './delivery-policy.js';
import type { MonitorEvent } from './format-monitor.js';
import { compileMonitorPattern } from './monitor-pattern.js';
import type { NotificationLane } from './task-notification.js';

/** Hands a monitor's notification to its owner's session (its delivery policy, then its inbox). */
export type MonitorNotify = (
  owner: Owner,
  taskId: TaskId,
  event: MonitorEvent,
) => DeliveryOutcome | undefined | Promise<DeliveryOutcome | undefined>;

/** The options of `createTaskMonitors`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const taskMonitorsOptions = defineOptions('createTaskMonitors', {
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['openCursor', 'get'])),
  notify: option.required(option.func<MonitorNotify>()),
  /** Monitors at once on one task (`MONITOR_LIMIT` beyond), 1 to 1000. Default 4. */
  maxMonitorsPerTask: option.integer({ min: 1, max: 1000, default: 4 }),
  /** Monitors at once in all (`MONITOR_LIMIT` beyond), 1 to 100000. Default 64. */
  maxMonitors: option.integer({ min: 1, max: 100_000, default: 64 }),
  /** Notifications one monitor sends per minute at most (1 to 600); lines in between wait and are counted. Default 6. */
  maxNotificationsPerMinute: option.integer({ min: 1, max: 600, default: 6 }),
  /** The largest `max` of a monitor: notifications it sends before it stops, 1 to 10000. Default 100. */
  maxNotificationsLimit: option.integer({ min: 1, max: 10_000, default: 100 }),
  /** The `max` of a monitor that names none. Default 20 (at most `maxNotificationsLimit`). */
  defaultMaxNotifications: option.integer({ min: 1, default: 20, atMost: 'maxNotificationsLimit' }),
  /** Lines one notification shows (1 to 1000); the rest are counted ("N more lines matched"). Default 20. */
  maxLinesPerNotification: option.integer({ min: 1, max: 1000, default: 20 }),
  /** Characters of a line matched and shown (16 to 65536); the rest of a longer line is ignored. Default 1024. */
  maxLineChars: option.integer({ min: 16, max: 65_536, default: 1024 }),
  /** Characters of a pattern, 1 to 4096. Default 256. */
  maxPatternChars: option.integer({ min: 1, max: 4096, default: 256 }),
  /** Lines that arrive within this long of the first go in one notification, 0 to 60000 ms. Default 1000 ms. */
  coalesceMs: option.integer({ min: 0, max: 60_000, default: 1000 }),
  /** A pattern that takes longer than this on one line stops its monitor, 1 to 60000 ms. Default 100 ms. */
  slowMatchMs: option.integer({ min: 1, max: 60_000, default: 100 }),
  /** Bytes one cursor read takes, 4 to 16777216. Default 65536. */
  readBytes: option.integer({ min: 4, max: 16_777_216, default: 65_536 }),
  /** Schedules coalescing and the per-minute window. Default: the system clock. */
  clock: option.clock({ default: systemClock }),
  /** Told about monitors that failed. Default: none (silent). */
  logger: option.logger({ default: { warn: () => {} } }),
});

/** Options of `createTaskMonitors`. */
export type TaskMonitorsOptions = OptionsInput<typeof taskMonitorsOptions.rules>;

/** The fixed defaults of `TaskMonitorsOptions`. */
export const TASK_MONITORS_DEFAULTS = taskMonitorsOptions.defaults;

const LIMIT_KEYS = [
  'maxMonitorsPerTask',
  'maxMonitors',
  'maxNotificationsPerMinute',
  'defaultMaxNotifications',
  'maxNotificationsLimit',
  'maxLinesPerNotification',
  'maxLineChars',
  'maxPatternChars',
  'coalesceMs',
  'slowMatchMs',
  'readBytes',
] as const;

export type ResolvedTaskMonitorsLimits = { readonly [Key in (typeof LIMIT_KEYS)[number]]: number };

/** What a caller asks a monitor to watch. */
export interface MonitorRequest {
  readonly taskId: string;
  /** A regular expression a line must match. Absent: `everyLine` must be true. */
  readonly pattern?: string | undefined;
  readonly ignoreCase?: boolean | undefined;
  /** Every line is a match (with no pattern). */
  readonly everyLine?: boolean | undefined;
  /** Default `quiet`: context for the next request; `wakeup` may start a turn. */
  readonly lane?: NotificationLane | undefined;
  /** Notifications before the monitor stops. Default `defaultMaxNotifications`. */
  readonly max?: number | undefined;
  /** `start`: the output so far too, then what follows; `now`: only what follows. Default `start`. */
  readonly from?: 'start' | 'now' | undefined;
}

export interface StartedMonitor {
  readonly monitorId: string;
  readonly taskId: TaskId;
  readonly matching: string;
  readonly lane: NotificationLane;
  readonly max: number;
}

export interface TaskMonitors {
  readonly limits: ResolvedTaskMonitorsLimits;
  /** Starts a monitor on a running background task the owner may see. */
  start(owner: Owner, request: MonitorRequest): Promise<StartedMonitor>;
  /** Stops the owner's monitors of a task; resolves to how many were stopped. */
  stop(owner: Owner, taskId: string): number;
  /** Monitors running now (of one task, when given). */
  count(taskId?: string): number;
  /** Stops every monitor. Idempotent. */
  dispose(): void;
}

export class MonitorLimitError extends ErrandError {
  constructor(taskId: string, scope: string, limit: number) {
    super(
      'MONITOR_LIMIT',
      'caller',
      `Cannot start another monitor on task ${taskId}: ${scope} already has ${limit} monitors; stop one first`,
      { context: { taskId, scope, limit } },
    );
  }
}

const MINUTE_MS = 60_000;
/** How long one cursor read waits for output before it looks again (the cursor stays open meanwhile). */
const READ_WAIT_MS = 30_000;

export function createTaskMonitors(input: TaskMonitorsOptions): TaskMonitors {
  const options = taskMonitorsOptions.resolve(input);
  const limits = Object.fromEntries(
    LIMIT_KEYS.map((key) => [key, options[key]]),
  ) as ResolvedTaskMonitorsLimits;
  const { clock, logger } = options;
  const monitors = new Set<Monitor>();
  let numbered = 0;
  let disposed = false;

  const onTask = (taskId: string) => [...monitors].filter((monitor) => monitor.taskId === taskId);

  return {
    limits,
    async start(owner, request) {
      if (disposed) throw new ErrandError('MONITORS_DISPOSED', 'caller', 'The task monitors are disposed');
      const spec = validateRequest(request, limits);
      const snapshot = options.tasks.get(request.taskId, owner);
      if (isTerminalStatus(snapshot.status)) throw new TaskNotRunningError(snapshot.id, snapshot.status);
      if (!snapshot.isBackgrounded) {
        throw new InvalidArgumentError(
          'task_id',
          'a background task (this one answers its own call)',
          request.taskId,
        );
      }
      if (onTask(snapshot.id).length >= limits.maxMonitorsPerTask) {
        throw new MonitorLimitError(snapshot.id, `task ${snapshot.id}`, limits.maxMonitorsPerTask);
      }
      if (monitors.size >= limits.maxMonitors) {
        throw new MonitorLimitError(snapshot.id, 'the runtime', limits.maxMonitors);
      }
      const cursor = await options.tasks.openCursor(snapshot.id, owner, {
        from: spec.from === 'now' ? 'end' : 'start',
      });
      if (disposed) {
        cursor.close();
        throw new ErrandError('MONITORS_DISPOSED', 'caller', 'The task monitors are disposed');
      }
      numbered += 1;
      const monitor: Monitor = new Monitor({
        monitorId: `m${numbered}`,
        taskId: snapshot.id,
        owner,
        cursor,
        spec,
        limits,
        clock,
        logger,
        notify: options.notify,
        ended: (): void => {
          monitors.delete(monitor);
        },
      });
      monitors.add(monitor);
      monitor.run();
      return {
        monitorId: monitor.monitorId,
        taskId: snapshot.id,
        matching: spec.matching,
        lane: spec.lane,
        max: spec.max,
      };
    },
    stop(owner, taskId) {
      const stopping = onTask(taskId).filter((monitor) => monitor.owner.sessionId === owner.sessionId);
      for (const monitor of stopping) monitor.stop();
      return stopping.length;
    },
    count(taskId) {
      return taskId === undefined ? monitors.size : onTask(taskId).length;
    },
    dispose() {
      disposed = true;
      for (const monitor of [...monitors]) monitor.stop();
    },
  };
}

interface MonitorSpec {
  readonly test: (line: string) => boolean;
  readonly matching: string;
  readonly lane: NotificationLane;
  readonly max: number;
  readonly from: 'start' | 'now';
}

function validateRequest(request: MonitorRequest, limits: ResolvedTaskMonitorsLimits): MonitorSpec {
  if (typeof request !== 'object' || request === null) {
    throw new InvalidArgumentError('request', 'an object', request);
  }
  const { pattern, everyLine, ignoreCase } = request;
  if (everyLine !== undefined && typeof everyLine !== 'boolean') {
    throw new InvalidArgumentError('every_line', 'a boolean', everyLine);
  }
  if (ignoreCase !== undefined && typeof ignoreCase !== 'boolean') {
    throw new InvalidArgumentError('ignore_case', 'a boolean', ignoreCase);
  }
  if (pattern === undefined && everyLine !== true) {
    throw new InvalidArgumentError('pattern', 'a regular expression (or every_line: true)', pattern);
  }
  if (pattern !== undefined && everyLine === true) {
    throw new InvalidArgumentError('every_line', 'left out when a pattern is given', everyLine);
  }
  const lane = request.lane ?? 'quiet';
  if (lane !== 'quiet' && lane !== 'wakeup')
    throw new InvalidArgumentError('lane', '"quiet" or "wakeup"', lane);
  const from = request.from ?? 'start';
  if (from !== 'start' && from !== 'now') throw new InvalidArgumentError('from', '"start" or "now"', from);
  const max = request.max ?? limits.defaultMaxNotifications;
  if (!Number.isSafeInteger(max) || max < 1 || max > limits.maxNotificationsLimit) {
    throw new InvalidArgumentError('max', describeIntegerRange(1, limits.maxNotificationsLimit), max);
  }
  if (pattern === undefined) return { test: () => true, matching: 'every line', lane, max, from };
  const regexp = compileMonitorPattern(pattern, ignoreCase === true, limits.maxPatternChars);
  return {
    test: (line) => regexp.test(line),
    matching: `/${pattern}/${ignoreCase === true ? 'i' : ''}`,
    lane,
    max,
    from,
  };
}

interface MonitorParts {
  readonly monitorId: string;
  readonly taskId: TaskId;
  readonly owner: Owner;
  readonly cursor: OutputCursor;
  readonly spec: MonitorSpec;
  readonly limits: ResolvedTaskMonitorsLimits;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly notify: MonitorNotify;
  readonly ended: () => unknown;
}

/** One monitor: its cursor loop, its line splitter, and its coalescing, rate-limited sender. */
class Monitor {
  readonly monitorId: string;
  readonly taskId: TaskId;
  readonly owner: Owner;
  readonly #parts: MonitorParts;
  readonly #stopped = new AbortController();
  /** The unfinished last line of what was read (at most `maxLineChars` kept). */
  #partial = '';
  /** True while the rest of a line longer than `maxLineChars` is being skipped. */
  #skippingLongLine = false;
  #batch: string[] = [];
  #batchMore = 0;
  #sentTimes: number[] = [];
  #sent = 0;
  #flushTimer: CancelTimer | undefined;
  #sending: Promise<void> = Promise.resolve();

  constructor(parts: MonitorParts) {
    this.#parts = parts;
    this.monitorId = parts.monitorId;
    this.taskId = parts.taskId;
    this.owner = parts.owner;
  }

  run(): void {
    void this.#loop();
  }

  stop(): void {
    if (this.#stopped.signal.aborted) return;
    this.#stopped.abort();
    this.#flushTimer?.();
    this.#flushTimer = undefined;
    this.#parts.cursor.close();
    this.#parts.ended();
  }

  async #loop(): Promise<void> {
    const { cursor, limits, logger } = this.#parts;
    try {
      while (!this.#stopped.signal.aborted) {
        const read = await cursor.read({
          maxBytes: limits.readBytes,
          waitMs: READ_WAIT_MS,
          signal: this.#stopped.signal,
        });
        if (this.#stopped.signal.aborted) break;
        // A missed-bytes marker is the cursor's note, not the task's output: it never matches, and the line
        // cut by the gap is not joined to what follows it.
        if (read.missedBytes > 0) {
          this.#partial = '';
          this.#skippingLongLine = true;
        }
        const text = read.missedBytes > 0 ? read.text.slice(read.text.indexOf('\n') + 1) : read.text;
        this.#take(text, read.ended);
        if (read.ended) {
          await this.#finish();
          break;
        }
      }
    } catch (error) {
      // The task was forgotten or the service disposed: the monitor ends with it.
      if (!ErrandError.hasCode(error, 'CURSOR_CLOSED')) {
        logger.warn(`task ${this.taskId}: monitor ${this.monitorId} stopped on an error`, {
          taskId: this.taskId,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    this.stop();
  }

  /** Splits what was read into lines and matches the complete ones (the last one too at the end). */
  #take(text: string, ended: boolean): void {
    const { maxLineChars } = this.#parts.limits;
    const pieces = text.split('\n');
    const last = pieces.pop() ?? '';
    for (const piece of pieces) {
      const line = this.#skippingLongLine ? '' : this.#partial + piece;
      const skipped = this.#skippingLongLine;
      this.#partial = '';
      this.#skippingLongLine = false;
      if (!skipped) this.#match(line);
      if (this.#stopped.signal.aborted) return;
    }
    if (!this.#skippingLongLine) {
      this.#partial += last;
      if (this.#partial.length > maxLineChars) {
        // A line this long is matched on its head; the rest of it, until its newline, is ignored.
        this.#match(this.#partial);
        this.#partial = '';
        this.#skippingLongLine = true;
      }
    }
    if (ended && this.#partial !== '') {
      this.#match(this.#partial);
      this.#partial = '';
    }
  }

  #match(raw: string): void {
    const { maxLineChars, slowMatchMs, maxLinesPerNotification } = this.#parts.limits;
    const line = shortenText(stripTerminalEscapes(raw).replace(/\r$/, ''), maxLineChars);
    const visible = line.slice(line.lastIndexOf('\r') + 1);
    const started = this.#parts.clock.now();
    const matched = this.#parts.spec.test(visible);
    if (this.#parts.clock.now() - started > slowMatchMs) {
      this.#stopForSlowPattern();
      return;
    }
    if (!matched) return;
    if (this.#batch.length < maxLinesPerNotification) this.#batch.push(visible);
    else this.#batchMore += 1;
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined) return;
    const { clock, limits } = this.#parts;
    const now = clock.now();
    const at = Math.max(now + limits.coalesceMs, this.#windowOpensAt(now));
    this.#flushTimer = clock.schedule(at - now, () => {
      this.#flushTimer = undefined;
      this.#flush();
    });
  }

  /** When the rate window next has room: now, or a minute after the oldest of the last few sends. */
  #windowOpensAt(now: number): number {
    this.#sentTimes = this.#sentTimes.filter((time) => time > now - MINUTE_MS);
    if (this.#sentTimes.length < this.#parts.limits.maxNotificationsPerMinute) return now;
    return this.#sentTimes[0]! + MINUTE_MS;
  }

  #flush(): void {
    if (this.#batch.length === 0 || this.#stopped.signal.aborted) return;
    const now = this.#parts.clock.now();
    if (this.#windowOpensAt(now) > now) {
      this.#scheduleFlush();
      return;
    }
    this.#send();
  }

  /** Sends the batch; the monitor's last one says it stopped, and the monitor stops. */
  #send(stopping?: MonitorEvent['stopping']): void {
    const { spec } = this.#parts;
    this.#sent += 1;
    this.#sentTimes.push(this.#parts.clock.now());
    const last = stopping ?? (this.#sent >= spec.max ? 'limit' : undefined);
    const event: MonitorEvent = {
      monitorId: this.monitorId,
      sequence: this.#sent,
      maxNotifications: spec.max,
      matching: spec.matching,
      lines: this.#batch,
      moreLines: this.#batchMore,
      lane: spec.lane,
      ...(last === undefined ? {} : { stopping: last }),
    };
    this.#batch = [];
    this.#batchMore = 0;
    // Sends leave in order, one at a time.
    this.#sending = this.#sending.then(() => this.#deliver(event));
    if (last !== undefined) this.stop();
  }

  async #deliver(event: MonitorEvent): Promise<void> {
    try {
      await this.#parts.notify(this.owner, this.taskId, event);
    } catch (error) {
      this.#parts.logger.warn(`task ${this.taskId}: monitor ${this.monitorId} could not notify`, {
        taskId: this.taskId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /** The task ended: what matched goes out now if the rate allows it (else it is left to task_output). */
  async #finish(): Promise<void> {
    this.#flushTimer?.();
    this.#flushTimer = undefined;
    const now = this.#parts.clock.now();
    if (this.#batch.length > 0 && this.#windowOpensAt(now) <= now) this.#send();
    await this.#sending;
  }

  #stopForSlowPattern(): void {
    this.#send('slow_pattern');
  }
}
