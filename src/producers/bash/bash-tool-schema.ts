/**
 * The `bash` tool's input schema, with or without `run_in_background`. Both are strict: an unknown key
 * (a misspelt parameter, or `run_in_background` on an instance that disabled it) is rejected, not
 * silently dropped.
 */
import { z } from 'zod';
import { type ReadinessInput, type ReadinessLimits, readinessSchema } from '../../tools/index.js';

export interface BashToolInput {
  readonly command: string;
  readonly description?: string | undefined;
  readonly timeout_ms?: number | undefined;
  readonly run_in_background?: boolean | undefined;
  readonly workdir?: string | undefined;
  readonly allow_duplicate?: boolean | undefined;
  readonly ready_when?: ReadinessInput | undefined;
}

export interface BashToolSchemaOptions {
  readonly enableRunInBackground: boolean;
  readonly defaultTimeoutMs: number;
  readonly maxTimeoutMs: number;
  /** When a foreground command moves to the background by itself; false: never. */
  readonly autoBackgroundAfterMs: number | false;
  /** Whether background calls are checked for an identical running command (and so offer `allow_duplicate`). */
  readonly duplicateGuard?: boolean;
  /** Offers `ready_when` (with run_in_background) when given. */
  readonly readiness?: {
    readonly limits: ReadinessLimits;
    readonly defaultMs: number;
    readonly maxMs: number;
  };
}

export function bashToolSchema(options: BashToolSchemaOptions): z.ZodType<BashToolInput> {
  const fields = {
    command: z.string().min(1).describe('The command to run, as `bash -c <command>`.'),
    description: z
      .string()
      .max(200)
      .optional()
      .describe('What the command does, in a few words (shown to the user and in notifications).'),
    timeout_ms: z
      .number()
      .int()
      .positive()
      .max(options.maxTimeoutMs)
      .optional()
      .describe(
        options.autoBackgroundAfterMs === false
          ? `Kill the command after this many milliseconds (default ${options.defaultTimeoutMs}, at most ${options.maxTimeoutMs}).`
          : `Kill the command after this many milliseconds (at most ${options.maxTimeoutMs}), even once it moved to the background. Without it, a command still running after ${options.autoBackgroundAfterMs} ms moves to the background and runs until it ends.`,
      ),
    workdir: z
      .string()
      .min(1)
      .optional()
      .describe(
        'The working directory; relative paths start from the session directory. Default: the session directory.',
      ),
  };
  if (!options.enableRunInBackground) return z.strictObject(fields);
  const background = {
    ...fields,
    run_in_background: z
      .boolean()
      .optional()
      .describe(
        'Run in the background and return a task id at once (servers, watchers, long builds). Read its output with task_output, stop it with task_kill; you are notified when it ends.',
      ),
  };
  const readyWhen =
    options.readiness === undefined
      ? undefined
      : readinessSchema(options.readiness.limits, {
          defaultMs: options.readiness.defaultMs,
          maxMs: options.readiness.maxMs,
        })
          .optional()
          .describe(
            'Start in the background (implies run_in_background) and answer once it is ready: an output line matches `pattern`, `port` accepts a TCP connection, or `url` answers `status` (default any 2xx); give exactly one. The answer carries the matching line or address, what was seen at its timeout_ms, or the ending if the command ends first.',
          );
  const ready = readyWhen === undefined ? background : { ...background, ready_when: readyWhen };
  if (options.duplicateGuard !== true) return z.strictObject(ready);
  return z.strictObject({
    ...ready,
    allow_duplicate: z
      .boolean()
      .optional()
      .describe(
        'Start a background command even when an identical one (same command, same directory) is still running. Default false: you get the running task id instead.',
      ),
  });
}
