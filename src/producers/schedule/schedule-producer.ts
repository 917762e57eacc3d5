/**
 * Scheduled tasks: time as a task kind (`schedule-N`). A schedule fires once (`at`, `in_ms`), repeatedly
 * (`every_ms`, or a cron expression in a time zone), or when its session has been idle for `idle_ms`; each
 * firing starts an automated turn of the owner's session (through the `ScheduleSessionPort` the session
 * runtime gives), with the tool set its definition allows. The task runs until its last firing
 * (`completed`) or until it is stopped (`killed`); its detail's `summary` says how many firings ran and
 * when the next is due, and every firing's outcome is recorded there once.
 *
 * Firings never overlap a turn: one that comes due while the session runs a turn waits until it is idle.
 * Idle-time schedules count from the moment the session became idle; any turn restarts the count.
 */
import {
  type JsonObject,
  ScheduleDefinitionInvalidError,
  type ScheduleInput,
  type StoreDurability,
  type StoredSchedule,
} from '../../store/index.js';
import {
  type CancelTimer,
  type Clock,
  ErrandError,
  InvalidArgumentError,
  type Logger,
  type Owner,
  type ScheduleProgress,
  systemClock,
  type TaskId,
  type TaskOutcome,
  type TaskService,
  type TaskSnapshot,
} from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';
import { READ_ONLY_TOOLS } from '../../tools/index.js';
import { type CronExpression, nextCronTime, parseCron } from './cron.js';

/** When a schedule fires. Exactly one of `at`, `in_ms`, `every_ms`, `cron`, `idle_ms`. */
export interface ScheduleWhen {
  /** One shot at this epoch-ms time. */
  readonly at?: number | undefined;
  /** One shot this long from now. */
  readonly in_ms?: number | undefined;
  /** Repeating, this often (at least `minIntervalMs`). */
  readonly every_ms?: number | undefined;
  /** Repeating, on a five-field cron expression. */
  readonly cron?: string | undefined;
  /** The cron expression's IANA time zone. Default UTC. */
  readonly time_zone?: string | undefined;
  /** Each time the session has been idle this long (at least `minIntervalMs`). */
  readonly idle_ms?: number | undefined;
  /** Firings of a repeating schedule before it completes. Default: `maxFirings`. */
  readonly times?: number | undefined;
}

/** What happens to firings that came due while no runtime ran the schedule. */
export type MissedFiringPolicy = 'run_once' | 'skip';

export interface ScheduleDefinition extends ScheduleWhen {
  /** What the automated turn is asked to do. */
  readonly prompt: string;
  /** The tools its automated turns may call. Default `READ_ONLY_TOOLS`. */
  readonly tools?: readonly string[] | undefined;
  /** Default `run_once`. */
  readonly missed?: MissedFiringPolicy | undefined;
  /** A short label. Default: the prompt's start. */
  readonly label?: string | undefined;
}

/** What a schedule's session offers it: its state, and automated turns. */
export interface ScheduleSessionPort {
  /** `idle` when no turn runs. */
  state(): 'idle' | 'running' | 'shutting_down' | 'closed';
  /** Calls `listener` on every state change. Returns an unsubscribe. */
  onState(listener: (state: string) => void): () => void;
  /** Runs one automated turn asking `prompt` with the tools `allowed`; resolves with its outcome in one line. */
  runAutomatedTurn(request: {
    readonly scheduleId: string;
    readonly prompt: string;
    readonly allowed: readonly string[];
    /** The firing's number (1 for the first), the same across a resume. */
    readonly firing: number;
    /** The definition's own prompt, without the automated turn's framing. */
    readonly instruction: string;
    /**
     * What the model was not told yet of firings missed or interrupted while no runtime ran the schedule
     * (already in `prompt`; a port that does not send `prompt` tells it beside `instruction`).
     */
    readonly note?: string | undefined;
  }): Promise<string>;
}

/**
 * Where a producer keeps its schedules' definitions so a restart resumes them (the session store's
 * `ScheduleDefinitions` part). Written at the start, before each firing's turn (the firing in progress),
 * after it (the count and the next due time), and removed once the schedule's ending is recorded.
 */
export interface ScheduleStore {
  saveSchedule(input: ScheduleInput, options?: { readonly durability?: StoreDurability }): unknown;
  getSchedule(sessionId: string, id: string): StoredSchedule | undefined;
  removeSchedule(sessionId: string, id: string): boolean;
}

export const scheduleProducerOptions = defineOptions('createScheduleProducer', {
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['start'])),
  /** The session a schedule's owner stands for. */
  sessionOf: option.required(option.func<(owner: Owner) => ScheduleSessionPort | undefined>()),
  /** Live schedules one session may have (`SCHEDULE_LIMIT` beyond), 1 to 1000. Default 20. */
  maxSchedulesPerSession: option.integer({ min: 1, max: 1000, default: 20 }),
  /** The shortest `every_ms` / `idle_ms`, 1 to 86400000 ms. Default 60000 (one minute). */
  minIntervalMs: option.integer({ min: 1, max: 86_400_000, default: 60_000 }),
  /** The most firings of one schedule, 1 to 100000. Default 1000. */
  maxFirings: option.integer({ min: 1, max: 100_000, default: 1000 }),
  /** Characters of a prompt, 1 to 100000. Default 4000. */
  maxPromptChars: option.integer({ min: 1, max: 100_000, default: 4000 }),
  clock: option.clock({ default: systemClock }),
  /** Where definitions live so a restart resumes them. Absent: schedules end with their runtime. */
  store: option.shaped<ScheduleStore>('a ScheduleStore', ['saveSchedule', 'getSchedule', 'removeSchedule']),
  /** Where a failed store write is reported. Default: none. */
  logger: option.shaped<Logger>('a Logger', ['warn']),
});

export type ScheduleProducerOptions = OptionsInput<typeof scheduleProducerOptions.rules>;

export class ScheduleLimitError extends ErrandError {
  constructor(sessionId: string, limit: number) {
    super(
      'SCHEDULE_LIMIT',
      'caller',
      `Session ${sessionId} already has ${limit} live schedules (the limit); stop one with task_kill first`,
      {
        context: { sessionId, limit },
      },
    );
  }
}

/** A checked definition: the one kind of trigger, with its times resolved. */
export interface PlannedSchedule {
  readonly definition: ScheduleDefinition;
  readonly kind: 'once' | 'every' | 'cron' | 'idle';
  readonly firstAt: number | undefined;
  readonly intervalMs: number | undefined;
  readonly cron: CronExpression | undefined;
  readonly times: number;
  readonly allowed: readonly string[];
  readonly missed: MissedFiringPolicy;
}

/** Validates a definition before anything is registered; errors name the field. */
export function planSchedule(
  definition: ScheduleDefinition,
  limits: { minIntervalMs: number; maxFirings: number; maxPromptChars: number },
  now: number,
): PlannedSchedule {
  if (
    typeof definition.prompt !== 'string' ||
    definition.prompt.trim() === '' ||
    definition.prompt.length > limits.maxPromptChars
  ) {
    throw new InvalidArgumentError(
      'prompt',
      `a non-empty string of at most ${limits.maxPromptChars} characters`,
      definition.prompt,
    );
  }
  const given = (['at', 'in_ms', 'every_ms', 'cron', 'idle_ms'] as const).filter(
    (key) => definition[key] !== undefined,
  );
  if (given.length !== 1) {
    throw new InvalidArgumentError(
      'at | in_ms | every_ms | cron | idle_ms',
      'exactly one of them',
      given.join(', ') || 'none',
    );
  }
  const times = definition.times ?? limits.maxFirings;
  if (!Number.isSafeInteger(times) || times < 1 || times > limits.maxFirings) {
    throw new InvalidArgumentError('times', `an integer from 1 to ${limits.maxFirings}`, definition.times);
  }
  const missed = definition.missed ?? 'run_once';
  if (missed !== 'run_once' && missed !== 'skip')
    throw new InvalidArgumentError('missed', '"run_once" or "skip"', missed);
  const allowed = definition.tools ?? READ_ONLY_TOOLS;
  if (!Array.isArray(allowed) || !allowed.every((tool) => typeof tool === 'string')) {
    throw new InvalidArgumentError('tools', 'a list of tool names', definition.tools);
  }
  const interval = (field: 'every_ms' | 'idle_ms') => {
    const value = definition[field];
    if (!Number.isSafeInteger(value) || value! < limits.minIntervalMs || value! > 2_147_483_647) {
      throw new InvalidArgumentError(
        field,
        `an integer from ${limits.minIntervalMs} to 2147483647 ms`,
        value,
      );
    }
    return value!;
  };
  const base = { definition, times, allowed, missed, cron: undefined, intervalMs: undefined };
  if (definition.at !== undefined || definition.in_ms !== undefined) {
    const at = definition.at ?? now + (definition.in_ms ?? 0);
    const field = definition.at !== undefined ? 'at' : 'in_ms';
    if (!Number.isFinite(at) || (definition.in_ms !== undefined && definition.in_ms < 0)) {
      throw new InvalidArgumentError(
        field,
        field === 'at' ? 'an epoch-ms time' : 'a non-negative number of ms',
        definition[field],
      );
    }
    return { ...base, kind: 'once', firstAt: at, times: 1 };
  }
  if (definition.every_ms !== undefined) {
    const every = interval('every_ms');
    return { ...base, kind: 'every', firstAt: now + every, intervalMs: every };
  }
  if (definition.cron !== undefined) {
    const cron = parseCron(definition.cron, definition.time_zone ?? 'UTC');
    const first = nextCronTime(cron, now);
    if (first === undefined)
      throw new InvalidArgumentError('cron', 'an expression that matches within five years', definition.cron);
    return { ...base, kind: 'cron', firstAt: first, cron };
  }
  return { ...base, kind: 'idle', firstAt: undefined, intervalMs: interval('idle_ms') };
}

/** Where a schedule stands, published in its task's detail (and so in its stored record). */
export interface ScheduleFacts {
  readonly summary?: string;
  readonly scheduleDefinition?: ScheduleDefinition;
  readonly fired?: number;
  readonly nextAt?: number | null;
  readonly lastFiredAt?: number | null;
  readonly lastOutcome?: string | null;
  /** Firings that came due while no runtime ran the schedule, and what the missed-firing policy did. */
  readonly missedNote?: string | null;
  /** Where it stands for every list (the kind-agnostic `TaskFacts.schedule`). */
  readonly schedule?: ScheduleProgress | null;
}

export interface StartScheduleOptions {
  readonly owner: Owner;
  /** Resume: how many firings already ran, and when the last one was due (from the stored record). */
  readonly resume?: {
    readonly id: string;
    readonly fired: number;
    readonly lastDueAt: number | undefined;
    readonly createdAt: number;
    /** The firing whose automated turn was running when the last runtime stopped (told as interrupted). */
    readonly firing?: number | undefined;
    /** What the model was not told yet (told with the next firing, or with the ending). */
    readonly note?: string | undefined;
  };
}

/** What a resumed schedule tells of a firing whose automated turn its last runtime did not finish. */
export function interruptedFiringNote(firing: number): string {
  return `Firing ${firing} was interrupted: the runtime stopped while its automated turn ran, so its outcome is unknown; it is not run again.`;
}

/** How a running schedule writes where it stands (through the producer's `store`). */
interface ScheduleWrites {
  save(
    fields: Pick<ScheduleInput, 'fired' | 'lastDueAt' | 'nextAt' | 'firing' | 'note'>,
    durability: StoreDurability,
  ): void;
  /** The schedule ended (its ending is being recorded): its definition goes. */
  forget(): void;
}

export class ScheduleProducer {
  readonly tasks: TaskService;
  readonly #options: ReturnType<typeof scheduleProducerOptions.resolve>;
  readonly #clock: Clock;

  constructor(options: ScheduleProducerOptions) {
    this.#options = scheduleProducerOptions.resolve(options);
    this.tasks = this.#options.tasks;
    this.#clock = this.#options.clock;
  }

  /**
   * Re-arms a schedule an earlier runtime left live, from its stored definition: the same id, count and
   * due times. A firing that was running when that runtime stopped counts as fired and is told as
   * interrupted, never run again; firings that came due meanwhile get the missed-firing policy, told once.
   * A record that was being stopped (`stopping`) ends `killed`; a definition this producer's limits refuse
   * ends `failed` with `SCHEDULE_DEFINITION_INVALID`. False when the store holds no row for it.
   */
  resume(
    record: { readonly id: string; readonly status: string; readonly label: string },
    owner: Owner,
  ): boolean {
    const store = this.#options.store;
    const row = store?.getSchedule(owner.sessionId, record.id);
    if (store === undefined || row === undefined) return false;
    const definition = row.definition as unknown as ScheduleDefinition;
    const settle = (outcome: TaskOutcome<ScheduleFacts>) => {
      this.tasks
        .start<ScheduleFacts>({
          kind: 'schedule',
          label: record.label,
          owner,
          background: true,
          resumeId: record.id as TaskId,
          detail: { scheduleDefinition: definition, fired: row.fired },
          run: () => ({ cancel: () => {}, done: Promise.resolve(outcome) }),
        })
        .then(
          () => this.#forget(store, row.sessionId, row.id),
          (error: unknown) => this.#warn(`schedule ${row.id}: settling it after the restart failed`, error),
        );
    };
    if (record.status === 'stopping') {
      settle({
        status: 'killed',
        output: `${row.id} was stopped while no runtime held it: fired ${row.fired}.`,
        error: 'Stopped while no runtime held it.',
        detail: { reason: 'cancelled', fired: row.fired, nextAt: null } as never,
      });
      return true;
    }
    try {
      planSchedule(definition, this.#options, row.createdAt);
    } catch (error) {
      const context = error instanceof ErrandError ? error.context : {};
      const invalid = new ScheduleDefinitionInvalidError(
        row.id,
        typeof context.field === 'string' ? context.field : 'definition',
        typeof context.expected === 'string' ? context.expected : 'a definition this runtime accepts',
        context.value,
      );
      settle({
        status: 'failed',
        error: `Not resumed after the restart: ${invalid.message}`,
        detail: { errorCode: invalid.code, fired: row.fired, nextAt: null } as never,
      });
      return true;
    }
    this.start(definition, {
      owner,
      resume: {
        id: row.id,
        fired: row.fired,
        lastDueAt: row.lastDueAt,
        createdAt: row.createdAt,
        firing: row.firing,
        note: row.note,
      },
    }).catch((error: unknown) => this.#warn(`schedule ${row.id}: resuming it failed`, error));
    return true;
  }

  /** Checks the definition, registers a `schedule` task and arms its first firing. */
  async start(definition: ScheduleDefinition, options: StartScheduleOptions): Promise<TaskSnapshot> {
    const now = this.#clock.now();
    const planned = planSchedule(definition, this.#options, options.resume?.createdAt ?? now);
    const session = this.#options.sessionOf(options.owner);
    if (session === undefined) {
      throw new ErrandError(
        'SCHEDULE_NEEDS_SESSION',
        'caller',
        'A schedule fires turns of its session; this owner has no session here',
      );
    }
    const live = this.tasks
      .list(options.owner)
      .filter(
        (task) => task.kind === 'schedule' && (task.status === 'running' || task.status === 'stopping'),
      );
    if (live.length >= this.#options.maxSchedulesPerSession) {
      throw new ScheduleLimitError(options.owner.sessionId, this.#options.maxSchedulesPerSession);
    }
    const label = definition.label ?? `schedule: ${definition.prompt.replace(/\s+/g, ' ').slice(0, 80)}`;
    const store = this.#options.store;
    const createdAt = options.resume?.createdAt ?? now;
    return this.tasks.start<ScheduleFacts>({
      kind: 'schedule',
      label,
      owner: options.owner,
      background: true,
      ...(options.resume === undefined ? {} : { resumeId: options.resume.id as never }),
      detail: { scheduleDefinition: definition, fired: options.resume?.fired ?? 0 },
      run: (context) => {
        const writes: ScheduleWrites = {
          save: (fields, durability) => {
            if (store === undefined) return;
            try {
              store.saveSchedule(
                {
                  sessionId: options.owner.sessionId,
                  id: context.taskId,
                  definition: definition as unknown as JsonObject,
                  createdAt,
                  ...fields,
                },
                { durability },
              );
            } catch (error) {
              this.#warn(`schedule ${context.taskId}: saving where it stands failed`, error);
            }
          },
          forget: () => {
            if (store !== undefined) this.#forget(store, options.owner.sessionId, context.taskId);
          },
        };
        return runSchedule(planned, session, this.#clock, context, options.resume, now, writes);
      },
    });
  }

  #forget(store: ScheduleStore, sessionId: string, id: string): void {
    try {
      store.removeSchedule(sessionId, id);
    } catch (error) {
      this.#warn(`schedule ${id}: removing its definition failed (prune removes it later)`, error);
    }
  }

  #warn(message: string, error: unknown): void {
    // A store closed by the runtime's own disposal: the row stays for the next resume, or for prune.
    if (error instanceof ErrandError && error.code === 'STORE_CLOSED') return;
    this.#options.logger?.warn(message, { error: error instanceof Error ? error.message : String(error) });
  }
}

function describeWhen(planned: PlannedSchedule): string {
  const d = planned.definition;
  const times = planned.times === 1 || planned.kind === 'once' ? '' : `, ${planned.times} times`;
  switch (planned.kind) {
    case 'once':
      return `once at ${new Date(planned.firstAt!).toISOString()}`;
    case 'every':
      return `every ${planned.intervalMs! / 1000} s${times}`;
    case 'cron':
      return `cron "${d.cron}" (${planned.cron!.timeZone})${times}`;
    case 'idle':
      return `after ${planned.intervalMs! / 1000} s idle${times}`;
  }
}

type RunContext = Parameters<Parameters<TaskService['start']>[0]['run']>[0];

function joinNotes(...notes: (string | undefined)[]): string | undefined {
  const given = notes.filter((note): note is string => note !== undefined && note !== '');
  return given.length === 0 ? undefined : given.join(' ');
}

function runSchedule(
  planned: PlannedSchedule,
  session: ScheduleSessionPort,
  clock: Clock,
  context: RunContext,
  resume: StartScheduleOptions['resume'],
  now: number,
  writes: ScheduleWrites,
) {
  const id = context.taskId;
  // A firing whose turn the last runtime did not finish counts as fired: it is told, never run again.
  let fired = Math.max(resume?.fired ?? 0, resume?.firing ?? 0);
  let lastDueAt = resume?.lastDueAt;
  let stopped = false;
  let firing = false;
  let cancelTimer: CancelTimer = () => {};
  let stopIdleWatch: () => void = () => {};
  let missedNote: string | undefined;
  /** What the model was not told yet: with the next firing's prompt, or with the ending. */
  let untold = joinNotes(
    resume?.note,
    resume?.firing === undefined ? undefined : interruptedFiringNote(resume.firing),
  );
  let nextDue: number | undefined;
  type Ending = {
    status: 'completed' | 'killed' | 'lost';
    output?: string;
    error?: string;
    detail: ScheduleFacts & { notificationLane?: 'quiet'; detached?: true };
  };
  let resolveDone!: (outcome: Ending) => void;
  const done = new Promise<Ending>((resolve) => {
    resolveDone = resolve;
  });

  /** The due time after `after` for clock-driven kinds; undefined when there is none. */
  const dueAfter = (after: number | undefined): number | undefined => {
    if (planned.kind === 'once') return after === undefined ? planned.firstAt : undefined;
    if (planned.kind === 'every') return after === undefined ? planned.firstAt : after + planned.intervalMs!;
    if (planned.kind === 'cron')
      return after === undefined ? planned.firstAt : nextCronTime(planned.cron!, after);
    return undefined;
  };

  const progress = (nextAt: number | null): ScheduleProgress => ({
    when: describeWhen(planned),
    fired,
    times: planned.times,
    nextAt,
    missed: planned.missed,
  });

  /** Where the schedule stands, into the store (immediate: a firing must never run twice). */
  const save = (extra: { firing?: number } = {}, durability: StoreDurability = 'immediate') =>
    // Once ended (its row goes) or let go of (its row stays as the next resume must read it): nothing more.
    !stopped &&
    writes.save(
      {
        fired,
        lastDueAt,
        nextAt: nextDue,
        ...(extra.firing === undefined ? {} : { firing: extra.firing }),
        note: untold,
      },
      durability,
    );

  const publish = (nextAt: number | undefined, lastOutcome?: string) => {
    nextDue = nextAt;
    const next =
      nextAt === undefined
        ? planned.kind === 'idle'
          ? 'next after the session is idle'
          : 'no further firing'
        : `next at ${new Date(nextAt).toISOString()}`;
    context.updateDetail({
      fired,
      nextAt: nextAt ?? null,
      schedule: progress(nextAt ?? null),
      lastFiredAt: lastDueAt ?? null,
      ...(lastOutcome === undefined ? {} : { lastOutcome }),
      ...(missedNote === undefined ? {} : { missedNote }),
      summary: `${describeWhen(planned)}; fired ${fired} of ${planned.times}; ${next}; missed firings: ${planned.missed === 'skip' ? 'skip' : 'run once'}`,
    } as never);
  };

  const finish = (status: 'completed' | 'killed', why: string) => {
    if (stopped) return;
    stopped = true;
    cancelTimer();
    stopIdleWatch();
    const note = untold;
    untold = undefined;
    resolveDone({
      status,
      output: `${id} ${why}: fired ${fired} of ${planned.times} (${describeWhen(planned)}).${note === undefined ? '' : ` ${note}`}`,
      detail: {
        fired,
        nextAt: null,
        schedule: progress(null),
        summary: `${describeWhen(planned)}; fired ${fired} of ${planned.times}; ${why}`,
        // Each firing was its own turn: the schedule's end rides along quietly, waking nobody — unless it
        // carries what the model was not told yet (a missed or interrupted firing).
        ...(note === undefined ? { notificationLane: 'quiet' as const } : {}),
      },
    });
    // Once the task's ending is recorded (the settle writes it), the definition goes.
    setImmediate(() => writes.forget());
  };

  /** A teardown (a clean runtime exit): let go without ending it; the next runtime resumes it. */
  const detach = () => {
    if (stopped) return;
    stopped = true;
    cancelTimer();
    stopIdleWatch();
    resolveDone({
      status: 'lost',
      error: `The runtime let go of ${id} at its exit; it is resumed when its session is resumed.`,
      detail: { detached: true },
    });
  };

  /** Runs one firing: waits for an idle session, then one automated turn; its outcome is recorded once. */
  const fire = async (dueAt: number | undefined, note?: string) => {
    if (stopped || firing) return;
    firing = true;
    try {
      await untilIdle(session, () => stopped);
      if (stopped) return;
      const number = fired + 1;
      const told = joinNotes(untold, note);
      lastDueAt = dueAt ?? clock.now();
      untold = undefined;
      // Before the turn starts: a runtime that dies during it leaves this firing marked in progress, and the
      // next one tells it as interrupted instead of running it again.
      save({ firing: number });
      fired = number;
      const prompt = [
        `[automated turn: ${id} fired (${fired} of ${planned.times}, ${describeWhen(planned)}). No person typed this; you may use only: ${planned.allowed.join(', ') || 'no tools'}.]`,
        ...(told === undefined ? [] : [`[${told}]`]),
        planned.definition.prompt,
      ].join('\n');
      let outcome: string;
      try {
        outcome = await session.runAutomatedTurn({
          scheduleId: id,
          prompt,
          allowed: planned.allowed,
          firing: fired,
          instruction: planned.definition.prompt,
          ...(told === undefined ? {} : { note: told }),
        });
      } catch (error) {
        outcome = `the turn failed: ${error instanceof Error ? error.message : String(error)}`;
      }
      const next = fired >= planned.times ? undefined : dueAfter(lastDueAt);
      publish(next, outcome.slice(0, 500));
      if (fired >= planned.times || (next === undefined && planned.kind !== 'idle')) {
        finish('completed', 'completed');
        return;
      }
      save();
      if (next !== undefined) arm(next);
    } finally {
      firing = false;
    }
  };

  const arm = (dueAt: number) => {
    cancelTimer();
    cancelTimer = clock.schedule(Math.max(0, dueAt - clock.now()), () => void fire(dueAt));
  };

  const watchIdle = () => {
    let cancelIdle: CancelTimer = () => {};
    const onState = (state: string) => {
      cancelIdle();
      if (state === 'idle' && !stopped)
        cancelIdle = clock.schedule(planned.intervalMs!, () => void fire(undefined));
    };
    const unsubscribe = session.onState(onState);
    onState(session.state());
    stopIdleWatch = () => {
      cancelIdle();
      unsubscribe();
    };
  };

  // First firing: fresh, or resumed with the missed-firing policy.
  if (fired >= planned.times) {
    // Every firing ran (the last one perhaps interrupted) before the runtime stopped.
    queueMicrotask(() => finish('completed', 'completed'));
  } else if (planned.kind === 'idle') {
    watchIdle();
    publish(undefined);
    save();
  } else {
    let next = dueAfter(lastDueAt);
    let missed = 0;
    // Only a resumed schedule can have missed firings; a fresh one due now fires now.
    while (resume !== undefined && next !== undefined && next < now && fired + missed < planned.times) {
      missed += 1;
      next = dueAfter(next);
    }
    if (missed > 0) {
      const last = planned.missed === 'run_once' ? 'ran once now' : 'skipped';
      missedNote = `${missed} firing${missed === 1 ? '' : 's'} came due while the runtime was down; missed-firing policy "${planned.missed}": ${last}.`;
      if (planned.missed === 'run_once') {
        publish(next);
        // Told with this firing (its prompt is stored before its turn runs), so it is not kept as untold.
        save();
        queueMicrotask(() => void fire(now, missedNote));
      } else {
        fired += missed;
        untold = joinNotes(untold, missedNote);
        if (fired >= planned.times || next === undefined)
          queueMicrotask(() => finish('completed', `completed (${missedNote})`));
        else {
          publish(next);
          save();
          arm(next);
        }
      }
    } else if (next === undefined) {
      queueMicrotask(() => finish('completed', 'completed'));
    } else {
      publish(next);
      save();
      arm(next);
    }
  }

  return {
    done,
    cancel: () => finish('killed', 'stopped'),
    detach,
  };
}

/** Resolves once the session is idle (or `stopped()` says to give up). */
function untilIdle(session: ScheduleSessionPort, stopped: () => boolean): Promise<void> {
  if (session.state() === 'idle' || stopped()) return Promise.resolve();
  return new Promise((resolve) => {
    const unsubscribe = session.onState((state) => {
      if (state === 'idle' || state === 'closed' || stopped()) {
        unsubscribe();
        resolve();
      }
    });
  });
}
