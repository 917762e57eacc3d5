/** Options of the task tools: one declaration with their defaults and their validation. */
import { taskMonitorsOptions } from '../notifications/index.js';
import {
  type Caller,
  type ControllerScope,
  MAX_TIMER_DELAY_MS,
  systemClock,
  type TaskService,
} from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';
import type { RecordedTasks } from './recorded-tasks.js';
import type { StopDispatch } from './stop-dispatch.js';
import type { UntoldEnding } from './untold-ending.js';

/** The options of `createTaskTools`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const taskToolsOptions = defineOptions('createTaskTools', {
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['read'])),
  /**
   * How long `task_output` with `wait: true` waits when the call gives no `timeout_ms`. Default 30000
   * (at most `maxWaitMs`).
   */
  defaultWaitMs: option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 30_000, atMost: 'maxWaitMs' }),
  /** The longest wait a call may ask for; longer requests are capped to it. Default 600000. */
  maxWaitMs: option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 600_000 }),
  /**
   * How long `task_kill` waits for the stopped task to end, so it can report the final status. 0 answers
   * right after the request. Default 3000.
   */
  killSettleMs: option.integer({ min: 0, max: MAX_TIMER_DELAY_MS, default: 3_000 }),
  /** The byte budget of a task's text when its producer set no `outputLimitBytes`. Default none (unbounded). */
  defaultOutputLimitBytes: option.integer({ min: 1 }),
  /** The byte budget of `task_list`'s text. Default none (its lines are bounded by the next two options). */
  listOutputLimitBytes: option.integer({ min: 1 }),
  /**
   * Tasks `task_list` shows, at most: the newest live ones first, then the newest finished ones; a first
   * line counts the rest. Default 50.
   */
  maxListedTasks: option.integer({ min: 1, max: 100_000, default: 50 }),
  /** Characters of a label `task_list` shows. Default 120. */
  maxLabelChars: option.integer({ min: 8, max: 100_000, default: 120 }),
  /**
   * The most `task_output`'s `tail_bytes` may ask for, and how far back `tail_lines` looks (4 to 16777216;
   * at most the task service's `maxCursorReadBytes`). Default 65536.
   */
  maxTailBytes: option.integer({ min: 4, max: 16_777_216, default: 65_536 }),
  /** The most `task_output`'s `tail_lines` may ask for (1 to 100000). Default 1000. */
  maxTailLines: option.integer({ min: 1, max: 100_000, default: 1000 }),
  /**
   * Adds `task_monitor`: its monitors hand their notifications to `notify` (the owner's delivery policy),
   * within these limits (see `createTaskMonitors`). Default: no `task_monitor`.
   */
  monitors: option.nested(taskMonitorsOptions.omit('tasks'), { optional: true }),
  /**
   * How often `task_output`'s `wait_for` probes a port or a URL, 5 to 60000 ms. A port that opens is seen
   * at most this late (plus the connect). Default 25 ms.
   */
  readinessPollMs: option.integer({ min: 5, max: 60_000, default: 25 }),
  /**
   * Which hosts `wait_for` may probe with `port` and `url`: `loopback` (localhost, 127.x.x.x, ::1) or
   * `any`. The probe runs in the runtime, outside any sandbox of the command. Default `loopback`.
   */
  readinessHosts: option.oneOf(['loopback', 'any'] as const, { default: 'loopback' }),
  /**
   * The endings a caller's session has queued and not delivered yet, for `task_digest` (the assembled
   * runtime: the session's inbox). Default: none besides terminal tasks whose delivery nobody claimed.
   */
  untold: option.func<(caller: Caller) => readonly UntoldEnding[]>(),
  /** The byte cap of `task_digest`'s text (256 to 1048576); past it the digest lists ids only. Default 4096. */
  digestMaxBytes: option.integer({ min: 256, max: 1_048_576, default: 4096 }),
  /** Times `wait_for` waits and `task_digest`'s running times. Default: the system clock. */
  clock: option.clock({ default: systemClock }),
  /** The stop dispatch `task_kill` goes through (with its per-kind strategies). Default: a new one over `tasks`. */
  stop: option.shaped<StopDispatch>('a StopDispatch', ['stopBackgroundTask']),
  /** The name the tools attach as a task controller. Default `task-tools`. */
  controllerName: option.string({ default: 'task-tools' }),
  /**
   * The owners whose background work these tools can collect and stop: the sessions they are given to
   * (`{ owner }` or `{ serves }`). Default: every owner and ownerless work — right when every session gets
   * these tools; narrow it when only some do, so a session without them cannot start work nobody collects.
   * `attachController` checks it.
   */
  controllerScope: option.shaped<ControllerScope>('a ControllerScope', []),
  /**
   * Finished tasks a store remembers that `tasks` does not hold (an earlier runtime's, after a resume):
   * `task_output` and `task_list` answer from them instead of `TASK_NOT_FOUND`. Default none.
   */
  recorded: option.shaped<RecordedTasks>('a RecordedTasks ({ read, list })', ['read', 'list']),
});

/** Options of `createTaskTools`. */
export type TaskToolsOptions = OptionsInput<typeof taskToolsOptions.rules>;
export type ResolvedTaskToolsOptions = ResolvedOptions<typeof taskToolsOptions.rules>;

/** The fixed defaults of `TaskToolsOptions`. */
export const TASK_TOOLS_DEFAULTS = taskToolsOptions.defaults;
