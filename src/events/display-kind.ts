/**
 * The display kind of a background work: decided once, where its events are emitted, so every viewer
 * draws the same category for the same task.
 */
import type { TaskKind } from '../tasks/index.js';

/**
 * `bash` (bash and pty tasks), `subagent` (agent tasks), `workflow` (workflow runs), `monitor` (monitors),
 * `schedule` (schedules: their firings and next due time), `other` (any kind a harness adds). Badges count
 * only `bash`, `subagent` and `workflow`.
 */
export type BackgroundWorkKind = 'bash' | 'subagent' | 'workflow' | 'monitor' | 'schedule' | 'other';

export const BACKGROUND_WORK_KINDS: readonly BackgroundWorkKind[] = [
  'bash',
  'subagent',
  'workflow',
  'monitor',
  'schedule',
  'other',
];

/** The kinds a "running work" badge counts. */
export const BADGE_WORK_KINDS: readonly BackgroundWorkKind[] = ['bash', 'subagent', 'workflow'];

export function displayKindOf(kind: TaskKind): BackgroundWorkKind {
  switch (kind) {
    case 'bash':
    case 'pty':
      return 'bash';
    case 'agent':
      return 'subagent';
    case 'workflow':
      return 'workflow';
    case 'monitor':
      return 'monitor';
    case 'schedule':
      return 'schedule';
    default:
      return 'other';
  }
}
