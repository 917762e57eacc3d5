/**
 * The kind-agnostic task tools — task_output, task_list, task_kill, task_digest — created together over one task
 * service. While they exist they are attached as a task controller (producers cannot start work nobody
 * could collect or stop otherwise); `dispose()` detaches them and ends their pending waits.
 */
import { createTaskMonitors, type TaskMonitors } from '../notifications/index.js';
import { createStopDispatch, type StopDispatch } from './stop-dispatch.js';
import { createTaskDigestTool, type TaskDigest } from './task-digest.js';
import { createTaskKillTool, type TaskKillInput, type TaskKillValue } from './task-kill.js';
import { createTaskListTool, type TaskListInput, type TaskListValue } from './task-list.js';
import { createTaskMonitorTool, type TaskMonitorInput, type TaskMonitorValue } from './task-monitor.js';
import { createTaskOutputTool, type TaskOutputInput, type TaskOutputValue } from './task-output.js';
import {
  type ResolvedTaskToolsOptions,
  type TaskToolsOptions,
  taskToolsOptions,
} from './task-tools-options.js';
import type { TaskToolsRuntime } from './task-tools-runtime.js';
import type { AnyToolDefinition, ToolDefinition } from './tool-definition.js';

export interface TaskTools {
  readonly taskOutput: ToolDefinition<TaskOutputInput, TaskOutputValue>;
  readonly taskList: ToolDefinition<TaskListInput, TaskListValue>;
  readonly taskKill: ToolDefinition<TaskKillInput, TaskKillValue>;
  /** `task_digest`: the live tasks and untold endings, for a model whose conversation was compacted. */
  readonly taskDigest: ToolDefinition<Record<string, never>, TaskDigest>;
  /** `task_monitor`, when the tools were created with `monitors`. */
  readonly taskMonitor: ToolDefinition<TaskMonitorInput, TaskMonitorValue> | undefined;
  /** The monitors `task_monitor` starts, when the tools were created with `monitors`. */
  readonly monitors: TaskMonitors | undefined;
  /** The definitions, in the order a model should see them (`task_monitor` last, when present). */
  readonly tools: readonly AnyToolDefinition[];
  /** The stop dispatch task_kill uses (register per-kind strategies on it). */
  readonly stop: StopDispatch;
  readonly options: ResolvedTaskToolsOptions;
  /** Detaches the controller, ends pending waits and stops monitors; later calls answer `TOOLS_DISPOSED`. Idempotent. */
  dispose(): void;
}

export function createTaskTools(options: TaskToolsOptions): TaskTools {
  const resolved = taskToolsOptions.resolve(options);
  const { tasks } = resolved;
  const stop = resolved.stop ?? createStopDispatch({ tasks });
  const disposal = new AbortController();
  const monitors =
    resolved.monitors === undefined ? undefined : createTaskMonitors({ ...resolved.monitors, tasks });
  const runtime: TaskToolsRuntime = {
    tasks,
    options: resolved,
    stop,
    disposed: disposal.signal,
    recorded: resolved.recorded,
    ...(monitors === undefined ? {} : { monitors }),
  };
  const taskOutput = createTaskOutputTool(runtime);
  const taskList = createTaskListTool(runtime);
  const taskKill = createTaskKillTool(runtime);
  const taskDigest = createTaskDigestTool(runtime);
  const taskMonitor = monitors === undefined ? undefined : createTaskMonitorTool(runtime);
  // Attach last: nothing above can fail after the controller is attached.
  const detach = tasks.attachController(resolved.controllerName, resolved.controllerScope);
  return Object.freeze({
    taskOutput,
    taskList,
    taskKill,
    taskDigest,
    taskMonitor,
    monitors,
    tools: Object.freeze(
      (taskMonitor === undefined
        ? [taskOutput, taskList, taskKill, taskDigest]
        : [taskOutput, taskList, taskKill, taskDigest, taskMonitor]) as AnyToolDefinition[],
    ),
    stop,
    options: resolved,
    dispose() {
      if (disposal.signal.aborted) return;
      disposal.abort(new Error('task tools disposed'));
      monitors?.dispose();
      detach();
    },
  });
}
