/** Why a process tree stopped: the one vocabulary every producer's exit facts use. */

/**
 * It ended on its own (`completed`, whatever its exit code), was cancelled, ran past its deadline, could
 * not be started, wrote more than its output file may hold, or went past a resource limit (memory, CPU
 * time, process count: `resource-limits.ts`).
 */
export type StopReason =
  | 'completed'
  | 'cancelled'
  | 'timed_out'
  | 'spawn_error'
  | 'output_limit'
  | 'memory_limit'
  | 'cpu_limit'
  | 'pids_limit';

export const STOP_REASONS: readonly StopReason[] = [
  'completed',
  'cancelled',
  'timed_out',
  'spawn_error',
  'output_limit',
  'memory_limit',
  'cpu_limit',
  'pids_limit',
];

/** Whether a stop reason is a resource limit's. */
export function isLimitStopReason(reason: string): reason is 'memory_limit' | 'cpu_limit' | 'pids_limit' {
  return reason === 'memory_limit' || reason === 'cpu_limit' || reason === 'pids_limit';
}

/** The reasons a stop can be requested for (the others are found, not asked for). */
export type RequestedStopReason = Exclude<StopReason, 'completed' | 'spawn_error'>;
