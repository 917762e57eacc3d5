/** Options of the workflow producer: one declaration with their defaults and their validation. */
import type { DeliveryPolicy } from '../../notifications/index.js';
import type { SessionStore } from '../../store/index.js';
import { consoleLogger, MAX_TIMER_DELAY_MS, type TaskService } from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../../tasks/options.js';
import { type BashExecutor, systemClock } from '../bash/index.js';
import type { SubagentProducer } from '../subagent/index.js';

/** The options of `createWorkflowProducer`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const workflowProducerOptions = defineOptions('createWorkflowProducer', {
  tasks: option.required(option.shaped<TaskService>('a TaskService', ['start'])),
  /** Where runs and their step journals are kept; resuming, even after a crash, reads them from here. */
  store: option.required(option.shaped<SessionStore>('a SessionStore', ['createRun'])),
  /**
   * The directory workflow scripts must live in (checked on real paths). Without it no script is ever
   * loaded: Errand never imports arbitrary modules by default.
   */
  directory: option.string(),
  /** Runs `ctx.agent` steps. Without it, `ctx.agent` fails with `WORKFLOW_AGENT_UNAVAILABLE`. */
  subagents: option.shaped<SubagentProducer>('a SubagentProducer', ['run']),
  /** Runs `ctx.bash` commands. Default: a private executor, created on first use, disposed with the producer. */
  executor: option.shaped<BashExecutor>('a BashExecutor', ['start']),
  /** The delivery policy of a session, for stall and input-needed notifications (e.g. `runtime.policyOf`). */
  policyOf: option.func<(sessionId: string) => DeliveryPolicy | undefined>(),
  /** A run with no progress for this long raises one "stalled" notification. `false` disables it. Default 300000 ms. */
  stallAfterMs: option.orFalse(option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 300_000 })),
  /** How long a cancelled script may take to return before it is abandoned. Default 5000 ms. */
  cancelGraceMs: option.integer({ min: 0, max: MAX_TIMER_DELAY_MS, default: 5_000 }),
  /** The most output a `ctx.bash` result carries (the newest bytes). Default 30000. */
  commandOutputLimitBytes: option.integer({ min: 1, default: 30_000 }),
  /** A `ctx.bash` command's deadline when the step gives none. `false`: none. Default 3600000 ms. */
  commandTimeoutMs: option.orFalse(option.integer({ min: 1, max: MAX_TIMER_DELAY_MS, default: 3_600_000 })),
  /** The presentation budget of a run's model-facing text. Default: none (the controller's). */
  outputLimitBytes: option.integer({ min: 1 }),
  /** The working directory of runs whose caller gives none. Default `process.cwd()`. */
  cwd: option.string(),
  /** Schedules stall checks and cancel graces. Default: the system clock. */
  clock: option.clock({ default: systemClock }),
  /** Told about failures no caller sees (recording a run's end, a stop in the background). Default: the console logger. */
  logger: option.logger({ default: consoleLogger }),
});

/** Options of `createWorkflowProducer`. */
export type WorkflowProducerOptions = OptionsInput<typeof workflowProducerOptions.rules>;
export type ResolvedWorkflowOptions = ResolvedOptions<typeof workflowProducerOptions.rules>;

/** The fixed defaults of `WorkflowProducerOptions`. */
export const WORKFLOW_DEFAULTS = workflowProducerOptions.defaults;
