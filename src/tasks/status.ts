/** Task statuses, and the mapping from the words producers' ports use to the registry's statuses. */

export type TaskStatus = 'running' | 'stopping' | 'completed' | 'killed' | 'failed' | 'lost';
export type LiveTaskStatus = 'running' | 'stopping';
export type TerminalTaskStatus = Exclude<TaskStatus, LiveTaskStatus>;

export const TASK_STATUSES: readonly TaskStatus[] = [
  'running',
  'stopping',
  'completed',
  'killed',
  'failed',
  'lost',
];
export const TERMINAL_STATUSES: readonly TerminalTaskStatus[] = ['completed', 'killed', 'failed', 'lost'];

export function isTerminalStatus(status: TaskStatus): status is TerminalTaskStatus {
  return status !== 'running' && status !== 'stopping';
}

/** Who asked a task to stop: the person (UI), the model (a tool call), or the runtime (sweeps, disposal). */
export type StopInitiator = 'user' | 'model' | 'system';

/**
 * Words execution ports report. They map on the way into the registry; the raw word is kept in `detail`
 * by the producer so nothing is lost.
 */
export type PortStatus =
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'killed'
  | 'timed_out'
  | 'output_limit'
  | 'memory_limit'
  | 'cpu_limit'
  | 'pids_limit'
  | 'spawn_error'
  | 'lost';

export function mapPortStatus(word: PortStatus): TerminalTaskStatus {
  switch (word) {
    case 'completed':
      return 'completed';
    case 'cancelled':
    case 'killed':
    case 'timed_out':
    case 'output_limit':
    case 'memory_limit':
    case 'cpu_limit':
    case 'pids_limit':
      return 'killed';
    case 'lost':
      return 'lost';
    case 'failed':
    case 'spawn_error':
      return 'failed';
  }
}
