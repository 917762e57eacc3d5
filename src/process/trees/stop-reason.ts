/** Why a process tree stopped: the one vocabulary every producer's exit facts use. */

/**
 * It ended on its own (`completed`, whatever its exit code), was cancelled, ran past its deadline, could
 * not be started, or wrote more than its output file may hold.
 */
export type StopReason = 'completed' | 'cancelled' | 'timed_out' | 'spawn_error' | 'output_limit';

export const STOP_REASONS: readonly StopReason[] = [
  'completed',
  'cancelled',
  'timed_out',
  'spawn_error',
  'output_limit',
];

/** The reasons a stop can be requested for (the others are found, not asked for). */
export type RequestedStopReason = Extract<StopReason, 'cancelled' | 'timed_out' | 'output_limit'>;
