/**
 * The runtime an MCP server runs on. There is no model in the loop — the client's model calls the tools
 * — so sessions get a model port that refuses, and every notification takes the quiet lane: it waits in
 * the session's queue until the MCP layer appends it to a tool result, and never starts a model turn.
 */
import { createErrandRuntime, type ErrandRuntime, errandRuntimeOptions } from '../host/index.js';
import { TASK_SERVICE_DEFAULTS } from '../registry/index.js';
import type { ModelPort } from '../session/index.js';
import { ErrandError, InvalidArgumentError } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';

/** A model port for sessions whose model lives in the MCP client: every request is refused. */
export const MCP_CLIENT_MODEL: ModelPort = Object.freeze({
  name: 'mcp-client',
  generate: () =>
    Promise.reject(
      new ErrandError(
        'NO_MODEL_IN_LOOP',
        'system',
        'This session has no model of its own: its model is the MCP client, which calls the tools directly',
      ),
    ),
});

/**
 * The options of `createMcpRuntime`: the runtime's, but `model` (the client is the model), and `maxTasks`.
 * A key not declared there (or in a part's options) is rejected with `UNKNOWN_OPTION`.
 */
export const mcpRuntimeOptions = defineOptions('createMcpRuntime', {
  ...errandRuntimeOptions.omit('model').rules,
  /**
   * Background tasks the client's session may have running at once; one more is refused with
   * `ADMISSION_LIMIT`. It sets `tasks.maxLiveTasksPerOwner`, raises the runtime-wide `tasks.maxLiveTasks`
   * (1000) to at least it, and the session's queue (`limits.maxQueuedCommands`) grows with it, so that
   * many tasks really run at once and every one of their endings is queued and pushed when they all end
   * together. Default 32: coding agents run a score of commands or subagents in parallel (Claude Code 20
   * subagents, Codex 64 processes). Give this or `tasks.maxLiveTasksPerOwner`, not both; a
   * `tasks.maxLiveTasks` below it is refused.
   */
  maxTasks: option.integer({ min: 1 }),
});

/** Options of `createMcpRuntime`. */
export type McpRuntimeOptions = OptionsInput<typeof mcpRuntimeOptions.rules>;

/** The default of `McpRuntimeOptions.maxTasks`. */
export const MCP_DEFAULT_MAX_TASKS = 32;

/**
 * `createErrandRuntime` for an MCP server: the refusing model port, notifications never wake a turn.
 * Subagents need a model of their own: without `subagents.model` their tools are left out, since every
 * subagent would fail on the refusing port.
 */
export async function createMcpRuntime(options: McpRuntimeOptions = {}): Promise<ErrandRuntime> {
  // Checked here: subagents without a model of their own are dropped below, unchecked otherwise.
  mcpRuntimeOptions.resolve(options, { where: 'createMcpRuntime' });
  const { maxTasks, ...runtimeOptions } = options;
  if (maxTasks !== undefined && options.tasks?.maxLiveTasksPerOwner !== undefined) {
    throw new InvalidArgumentError(
      'maxTasks',
      'left out when `tasks.maxLiveTasksPerOwner` is given (they set the same limit)',
      maxTasks,
    );
  }
  const perOwner = options.tasks?.maxLiveTasksPerOwner ?? maxTasks ?? MCP_DEFAULT_MAX_TASKS;
  const runtimeWide = options.tasks?.maxLiveTasks;
  if (maxTasks !== undefined && runtimeWide !== undefined && runtimeWide < maxTasks) {
    throw new InvalidArgumentError(
      'tasks.maxLiveTasks',
      `at least \`maxTasks\` (${maxTasks}): the runtime-wide limit would refuse the tasks \`maxTasks\` allows`,
      runtimeWide,
    );
  }
  const subagents = options.subagents && options.subagents.model !== undefined ? options.subagents : false;
  return createErrandRuntime({
    ...runtimeOptions,
    tasks: {
      ...options.tasks,
      maxLiveTasksPerOwner: perOwner,
      maxLiveTasks: runtimeWide ?? Math.max(TASK_SERVICE_DEFAULTS.maxLiveTasks, perOwner),
    },
    model: MCP_CLIENT_MODEL,
    subagents,
    // The client's model runs the turns: a schedule's firing reaches it as a notification.
    scheduleFirings: options.scheduleFirings ?? 'notifications',
    notifications: { ...options.notifications, wakeBudget: 0 },
  });
}
