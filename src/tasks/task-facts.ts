/**
 * Producer facts: what a producer says about its task (exit code, output file, tool-use id, ...) through
 * `spec.detail`, `context.updateDetail` and `outcome.detail`, and what a snapshot's `detail` holds. The
 * registry stores and projects them without interpreting them; these types say what each fact means, so
 * a misspelt key does not compile, and `taskFact` is the one reader that also checks a value's type.
 */
import { InvalidArgumentError } from './errors.js';

/**
 * `wakeup`: the message starts a model turn when the session is idle. `quiet`: it becomes context for
 * the next request without waking an idle agent.
 */
export type NotificationLane = 'wakeup' | 'quiet';

/** What an agent-like task spent: `detail.usage` (the subagent notification shows it). */
export interface UsageFacts {
  /** Input plus output tokens. */
  readonly totalTokens?: number;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  /** Tool calls the work made. */
  readonly toolUses?: number;
  /** From the start of the work to its end, by the producer's clock. */
  readonly durationMs?: number;
}

/**
 * What a confined command may touch (`src/process/launch/sandbox.ts` enforces it with bubblewrap):
 * - `read-only`: the whole filesystem read-only, a private empty `/tmp`, a pid namespace of its own;
 * - `workspace-write`: the same, plus writes under the workspace (the session's working directory);
 * - `full`: the user's own rights (no filesystem confinement; with the network off it still runs in bwrap).
 */
export type SandboxProfile = 'read-only' | 'workspace-write' | 'full';

/** The sandbox a task's commands run in: `detail.sandbox` (task lists, the dashboard and events show it). */
export interface SandboxFacts {
  readonly profile: SandboxProfile;
  /** False when the commands have no network (a namespace of their own with only a private loopback). */
  readonly network: boolean;
}

/**
 * The facts Errand's kind-agnostic surfaces read (notifications, the task tools, events and the
 * dashboard, the MCP server, the store). Every fact is optional and JSON-ready; `null` says "known to be
 * absent" (a command ended by a signal has `exitCode: null`). A producer's own facts extend this
 * interface (`BashFacts`, `PtyFacts`, `SubagentFacts`, `WorkflowFacts`, or yours) and are published with
 * `tasks.start<MyFacts>(spec)`.
 */
export interface TaskFacts {
  /** What the task is about in one phrase; shown instead of the label where there is one. */
  readonly description?: string | null;
  /** The id of the tool call that started the task (`<tool-use-id>`; a viewer finds its card by it). */
  readonly toolUseId?: string | null;
  /** The file holding the task's whole output. */
  readonly outputFile?: string | null;
  /** Output bytes produced so far (the final count once the task has ended). */
  readonly outputBytes?: number | null;
  /** The end of the output, for the notification's `<output-tail>` (the default tail source). */
  readonly outputTail?: string | null;
  /** The end of the output, for viewers (the events' default fact reader). */
  readonly tail?: string | null;
  /** The process id of the task's main process, while it runs and after. */
  readonly pid?: number | null;
  /** The exit code; a `completed` task with a non-zero exit code reads `failed` to the model. */
  readonly exitCode?: number | null;
  /** The signal that ended the process (`SIGTERM`, ...). */
  readonly signal?: string | null;
  /** The producer's raw word for why the work ended (`completed`, `cancelled`, `timed_out`, ...). */
  readonly reason?: string | null;
  /** The reason the stop that ended the task gave (a `task_kill` reason, `owner disposal`, ...). */
  readonly stopReason?: string | null;
  /** The lane of the task's notification; it wins over the delivery policy's `laneOf` and `lanes`. */
  readonly notificationLane?: NotificationLane | null;
  /** The task that replaced this one (an amended workflow run); a superseded end is never notified. */
  readonly supersededBy?: string | null;
  /** What the work spent (tokens, tool uses, duration). */
  readonly usage?: UsageFacts | null;
  /** The process group of the task's tree (its leader's pid); null when it never started. */
  readonly pgid?: number | null;
  /** The start time of the task's main process (clock ticks after boot), to tell a reused pid. */
  readonly processStartTime?: number | null;
  /** The boot the process started in (`/proc/sys/kernel/random/boot_id`). */
  readonly bootId?: string | null;
  /** The environment tag every process of the tree carries (`NAME=value`). */
  readonly processTag?: string | null;
  /** The file the tree's exit status (or who stopped it) is written to, outliving the runtime. */
  readonly statusFile?: string | null;
  /** True for work that keeps running when its runtime dies, and is re-attached on resume. */
  readonly durable?: boolean | null;
  /** Bytes of the output the model has read (its `task_output` cursor), kept across a resume. */
  readonly readOffset?: number | null;
  /** True once the runtime let go of durable work at its exit (it runs on; the record stays live). */
  readonly detached?: boolean | null;
  /** True for work a resumed runtime took over from an earlier one. */
  readonly adopted?: boolean | null;
  /** Which case of `lost` a task is (`machine_restarted`, `pid_reused`, ...), named in its notice. */
  readonly lostCase?: string | null;
  /** When a stop made from outside the runtime (the lifeline, a later runtime) ended the tree. */
  readonly stoppedAt?: number | null;
  /** True when part of the process tree outlived SIGTERM and was sent SIGKILL. */
  readonly escalated?: boolean | null;
  /** The strongest signal sent to the tree: `SIGKILL`, `SIGTERM`, or null when none was sent. */
  readonly killSignal?: 'SIGKILL' | 'SIGTERM' | null;
  /** Processes of the tree that received a signal. */
  readonly signalledProcesses?: number | null;
  /** Processes still alive when the stop gave up on them. */
  readonly survivors?: readonly number[] | null;
  /** The sandbox the task's commands run in; absent when they run with the user's own rights. */
  readonly sandbox?: SandboxFacts | null;
  /** The task's state in one line, for the task digest and lists (a schedule: its firings and the next one). */
  readonly summary?: string | null;
  /** A schedule's progress, for every list (`task_list`, the dashboard, `errand chat`). */
  readonly schedule?: ScheduleProgress | null;
}

/** Where a schedule stands: `detail.schedule` of a `schedule` task. */
export interface ScheduleProgress {
  /** When it fires, in words: `every 2 s, 3 times`, `cron "0 7 * * 1-5" (Europe/Berlin)`. */
  readonly when: string;
  /** Firings that ran (or were skipped by the missed-firing policy). */
  readonly fired: number;
  /** Firings in all before it completes. */
  readonly times: number;
  /** When the next firing is due (epoch ms); null when none is (idle-time, or ended). */
  readonly nextAt: number | null;
  /** What happens to firings missed while no runtime ran it. */
  readonly missed: 'run_once' | 'skip';
}

/** A fact's value once checked: present and of its documented type. */
export type FactValue<K extends keyof TaskFacts> = Exclude<TaskFacts[K], null | undefined>;

function isText(value: unknown): boolean {
  return typeof value === 'string' && value !== '';
}

function isFiniteNumber(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value);
}

function isBoolean(value: unknown): boolean {
  return typeof value === 'boolean';
}

function isLane(value: unknown): boolean {
  return value === 'wakeup' || value === 'quiet';
}

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isScheduleProgress(value: unknown): boolean {
  if (!isObject(value)) return false;
  const facts = value as Partial<Record<keyof ScheduleProgress, unknown>>;
  return (
    isText(facts.when) &&
    isFiniteNumber(facts.fired) &&
    isFiniteNumber(facts.times) &&
    (facts.nextAt === null || isFiniteNumber(facts.nextAt)) &&
    (facts.missed === 'run_once' || facts.missed === 'skip')
  );
}

function isSandboxFacts(value: unknown): boolean {
  if (!isObject(value)) return false;
  const facts = value as { profile?: unknown; network?: unknown };
  return (
    (facts.profile === 'read-only' || facts.profile === 'workspace-write' || facts.profile === 'full') &&
    typeof facts.network === 'boolean'
  );
}

// One check per fact; the compiler insists that every fact of `TaskFacts` has one.
const FACT_CHECKS: { readonly [K in keyof TaskFacts]-?: (value: unknown) => boolean } = {
  description: isText,
  toolUseId: isText,
  outputFile: isText,
  outputBytes: isFiniteNumber,
  outputTail: isText,
  tail: isText,
  pid: isFiniteNumber,
  exitCode: isFiniteNumber,
  signal: isText,
  reason: isText,
  stopReason: isText,
  notificationLane: isLane,
  supersededBy: isText,
  usage: isObject,
  pgid: isFiniteNumber,
  processStartTime: isFiniteNumber,
  bootId: isText,
  processTag: isText,
  statusFile: isText,
  durable: isBoolean,
  readOffset: isFiniteNumber,
  detached: isBoolean,
  adopted: isBoolean,
  lostCase: isText,
  stoppedAt: isFiniteNumber,
  escalated: isBoolean,
  killSignal: (value) => value === 'SIGKILL' || value === 'SIGTERM',
  signalledProcesses: isFiniteNumber,
  survivors: (value) => Array.isArray(value) && value.every(isFiniteNumber),
  sandbox: isSandboxFacts,
  summary: isText,
  schedule: isScheduleProgress,
};

/**
 * One fact of a task (a snapshot, or a stored record whose `detail` is plain JSON): its value when
 * present and of its documented type (a non-empty string, a finite number, a known lane, an object),
 * else undefined. Producers outside TypeScript and old records can hold anything; readers that go
 * through here never see a wrong type. A key that is not a fact does not compile (and throws
 * `INVALID_ARGUMENT` from JavaScript).
 */
export function taskFact<K extends keyof TaskFacts>(
  task: { readonly detail: object },
  key: K,
): FactValue<K> | undefined {
  const check = Object.hasOwn(FACT_CHECKS, key) ? FACT_CHECKS[key] : undefined;
  if (check === undefined) throw new InvalidArgumentError('key', 'a key of TaskFacts', key);
  const value: unknown = (task.detail as Readonly<Record<string, unknown>>)[key];
  return check(value) ? (value as FactValue<K>) : undefined;
}
