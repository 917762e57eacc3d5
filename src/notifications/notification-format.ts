/** The formatter contract, the output-tail limits and the pieces every form shares. */

import type { TaskSnapshot } from '../tasks/index.js';
import { defineOptions, option, type ResolvedOptions } from '../tasks/options.js';
import { lastLines, stripTerminalEscapes, truncateUtf8Tail } from '../text/index.js';

/** The limits of `<output-tail>` (the delivery policy's `outputTail`). */
export const outputTailOptions = defineOptions('outputTail', {
  /** Lines kept from the end of the output. Default 20. */
  maxLines: option.integer({ min: 1, default: 20 }),
  /** UTF-8 bytes kept from the end of those lines. Default 2048. */
  maxBytes: option.integer({ min: 1, default: 2048 }),
});

export type OutputTailLimits = ResolvedOptions<typeof outputTailOptions.rules>;

export const DEFAULT_OUTPUT_TAIL_LIMITS: OutputTailLimits = outputTailOptions.defaults;

export interface NotificationFormatInput {
  readonly snapshot: TaskSnapshot;
  /**
   * Recent output, from a non-consuming source (a producer's ring buffer or output file) — never the
   * model's read cursor, which a notification must not advance.
   */
  readonly outputTail?: string;
  /** Limits of the `<output-tail>` element; `false` leaves it out. Default 20 lines / 2 KiB. */
  readonly outputTailLimits?: OutputTailLimits | false;
  /** The most UTF-8 bytes the notification may take. Absent: unbounded. */
  readonly budgetBytes?: number;
}

/** Renders one terminal notification. Formatters are pure: same input, same text. */
export type NotificationFormatter = (input: NotificationFormatInput) => string;

/** The stable instruction every form carries next to the task id. */
export function collectInstruction(taskId: string): string {
  return `Read it with task_output (task_id "${taskId}").`;
}

/** Keeps only what a terminal line would show after `\r` overwrites. */
function applyCarriageReturns(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      const trimmed = line.endsWith('\r') ? line.slice(0, -1) : line;
      const last = trimmed.lastIndexOf('\r');
      return last < 0 ? trimmed : trimmed.slice(last + 1);
    })
    .join('\n');
}

/** The bounded, escape-free tail shown in `<output-tail>`; '' when there is none or it is turned off. */
export function boundOutputTail(
  tail: string | undefined,
  limits: OutputTailLimits | false | undefined,
): string {
  if (tail === undefined || limits === false) return '';
  const { maxLines, maxBytes } = limits ?? DEFAULT_OUTPUT_TAIL_LIMITS;
  const plain = applyCarriageReturns(stripTerminalEscapes(tail)).replace(/\s+$/, '');
  return truncateUtf8Tail(lastLines(plain, maxLines), maxBytes);
}
