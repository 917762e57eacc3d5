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
  type CancelTimer,
  type Clock,
  ErrandError,
  InvalidArgumentError,
  type Owner,
  systemClock,
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
  }): Promise<string>;
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
}

export interface StartScheduleOptions {
  readonly owner: Owner;
  /** Resume: how many firings already ran, and when the last one was due (from the stored record). */
  readonly resume?: {
    readonly id: string;
    readonly fired: number;
    readonly lastDueAt: number | undefined;
    readonly createdAt: number;
  };
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
    return this.tasks.start<ScheduleFacts>({
      kind: 'schedule',
      label,
      owner: options.owner,
      background: true,
      ...(options.resume === undefined ? {} : { resumeId: options.resume.id as never }),
      detail: { scheduleDefinition: definition, fired: options.resume?.fired ?? 0 },
      run: (context) => runSchedule(planned, session, this.#clock, context, options.resume, now),
    });
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

function runSchedule(
  planned: PlannedSchedule,
  session: ScheduleSessionPort,
  clock: Clock,
  context: RunContext,
  resume: StartScheduleOptions['resume'],
  now: number,
) {
  const id = context.taskId;
  let fired = resume?.fired ?? 0;
  let lastDueAt = resume?.lastDueAt;
  let stopped = false;
  let firing = false;
  let cancelTimer: CancelTimer = () => {};
  let stopIdleWatch: () => void = () => {};
  let missedNote: string | undefined;
  type Ending = {
    status: 'completed' | 'killed';
    output: string;
    detail: ScheduleFacts & { notificationLane: 'quiet' };
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

  const publish = (nextAt: number | undefined, lastOutcome?: string) => {
    const next =
      nextAt === undefined
        ? planned.kind === 'idle'
          ? 'next after the session is idle'
          : 'no further firing'
        : `next at ${new Date(nextAt).toISOString()}`;
    context.updateDetail({
      fired,
      nextAt: nextAt ?? null,
      lastFiredAt: lastDueAt ?? null,
      ...(lastOutcome === undefined ? {} : { lastOutcome }),
      ...(missedNote === undefined ? {} : { missedNote }),
      summary: `${describeWhen(planned)}; fired ${fired} of ${planned.times}; ${next}`,
    } as never);
  };

  const finish = (status: 'completed' | 'killed', why: string) => {
    if (stopped) return;
    stopped = true;
    cancelTimer();
    stopIdleWatch();
    resolveDone({
      status,
      output: `${id} ${why}: fired ${fired} of ${planned.times} (${describeWhen(planned)}).`,
      detail: {
        fired,
        nextAt: null,
        summary: `${describeWhen(planned)}; fired ${fired} of ${planned.times}; ${why}`,
        // Each firing was its own turn: the schedule's end rides along quietly, waking nobody.
        notificationLane: 'quiet',
      },
    });
  };

  /** Runs one firing: waits for an idle session, then one automated turn; its outcome is recorded once. */
  const fire = async (dueAt: number | undefined, note?: string) => {
    if (stopped || firing) return;
    firing = true;
    try {
      await untilIdle(session, () => stopped);
      if (stopped) return;
      fired += 1;
      lastDueAt = dueAt ?? clock.now();
      const prompt = [
        `[automated turn: ${id} fired (${fired} of ${planned.times}, ${describeWhen(planned)}). No person typed this; you may use only: ${planned.allowed.join(', ') || 'no tools'}.]`,
        ...(note === undefined ? [] : [note]),
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
  if (planned.kind === 'idle') {
    watchIdle();
    publish(undefined);
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
        queueMicrotask(() => void fire(now, `[${missedNote}]`));
      } else {
        fired += missed;
        if (fired >= planned.times || next === undefined)
          queueMicrotask(() => finish('completed', `completed (${missedNote})`));
        else {
          publish(next);
          arm(next);
        }
      }
    } else if (next === undefined) {
      queueMicrotask(() => finish('completed', 'completed'));
    } else {
      publish(next);
      arm(next);
    }
  }

  return {
    done,
    cancel: () => finish('killed', 'stopped'),
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
