/**
 * The model-facing pty tools. `pty_start` starts a program in a pseudo-terminal as a background task;
 * `pty_write` types into it and shows the screen once it settles; `pty_resize` changes its size. Reading
 * and stopping use the generic `task_output` and `task_kill`. Only the owning session reaches a task.
 */
import { resolve as resolvePath } from 'node:path';
import { z } from 'zod';
import { sandboxOption } from '../../process/index.js';
import { type Clock, createTrustedCaller, resolveWorkdir } from '../../tasks/index.js';
import { defineOptions, type OptionsInput } from '../../tasks/options.js';
import {
  type AnyToolDefinition,
  type BackgroundToolValue,
  defineTool,
  describeSandbox,
  describeToolError,
  ToolCallAbortedError,
  type ToolContext,
  type ToolDefinition,
  toolError,
  toolResult,
} from '../../tools/index.js';
import { PTY_KEY_NAMES, type PtyKeyName } from './keys.js';
import { MIN_COLS, MIN_ROWS } from './options.js';
import type { PtyExit } from './pty-process.js';
import type { PtyProducer, PtyScreenSnapshot, PtyStarted } from './pty-producer.js';
import { waitForQuiet, waitForScreen } from './screen-wait.js';

const trusted = createTrustedCaller('pty-tools');

export interface PtyStartInput {
  readonly command: string;
  readonly description?: string | undefined;
  readonly workdir?: string | undefined;
  readonly cols?: number | undefined;
  readonly rows?: number | undefined;
  readonly run_in_background?: boolean | undefined;
  readonly timeout_ms?: number | undefined;
}

/** A foreground `pty_start` whose program ended within the call: its final screen. */
export interface PtyForegroundValue extends PtyScreenValue {
  readonly kind: 'foreground';
  readonly exitCode: number | null;
  readonly signal: string | null;
}

/** The value of `pty_start`: a background task, or the final screen of a program that ended in the call. */
export type PtyStartValue = BackgroundToolValue | PtyForegroundValue;

export interface PtyWriteInput {
  readonly task_id: string;
  readonly input?: string | undefined;
  readonly keys?: readonly PtyKeyName[] | undefined;
  readonly wait_for?: string | undefined;
  readonly timeout_ms?: number | undefined;
}

export interface PtyResizeInput {
  readonly task_id: string;
  readonly cols: number;
  readonly rows: number;
}

/** The canonical value of `pty_write` and `pty_resize`: the screen as the model was shown it. */
export interface PtyScreenValue {
  readonly taskId: string;
  readonly screen: string;
  readonly cols: number;
  readonly rows: number;
  readonly cursorRow: number;
  readonly cursorColumn: number;
  readonly running: boolean;
  /** For `pty_write` with `wait_for`: whether the text appeared in time. */
  readonly matched?: boolean;
}

/** The options of `createPtyTools` / `createPtyStartTool`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const ptyToolsOptions = defineOptions('createPtyTools', {
  /**
   * The sandbox this tool's programs run in, whatever the producer's default: a profile (`read-only`,
   * `workspace-write`, `full`), `{ profile, network }`, or a `Sandbox`. `workspace-write` allows writes
   * under the session's working directory. The description tells the model. Default: the producer's.
   */
  sandbox: sandboxOption(),
});

/** Options of `createPtyTools` / `createPtyStartTool`. */
export type PtyToolsOptions = OptionsInput<typeof ptyToolsOptions.rules>;

function sizeSchemas(producer: PtyProducer) {
  const { maxCols, maxRows } = producer.options;
  return {
    cols: z.number().int().min(MIN_COLS).max(maxCols),
    rows: z.number().int().min(MIN_ROWS).max(maxRows),
  };
}

function abortedBeforeStart(name: string, context: ToolContext) {
  return toolError(describeToolError(new ToolCallAbortedError(name, context.signal.reason)));
}

export function createPtyStartTool(
  producer: PtyProducer,
  options: PtyToolsOptions = {},
): ToolDefinition<PtyStartInput, PtyStartValue> {
  const sandbox =
    ptyToolsOptions.resolve(options, { where: 'createPtyStartTool' }).sandbox ?? producer.options.sandbox;
  const size = sizeSchemas(producer);
  const { defaultCols, defaultRows, maxSettleTimeoutMs, clock } = producer.options;
  const inputSchema = z.strictObject({
    command: z
      .string()
      .min(1)
      .describe('The command line to run in the terminal, e.g. "python3", "npm run dev", "ssh host".'),
    description: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('A short description of what the program is for, shown in task lists.'),
    workdir: z
      .string()
      .min(1)
      .optional()
      .describe("Working directory, absolute or relative to the session's. Default: the session's."),
    cols: size.cols.optional().describe(`Terminal width in columns. Default ${defaultCols}.`),
    rows: size.rows.optional().describe(`Terminal height in rows. Default ${defaultRows}.`),
    run_in_background: z
      .boolean()
      .optional()
      .describe(
        'Default true: return the task id at once (interactive programs, servers). false: wait for the ' +
          'program to end and return its final screen; one still running after timeout_ms moves to the background.',
      ),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(maxSettleTimeoutMs)
      .optional()
      .describe(
        `With run_in_background false: how long to wait for the program to end. Default ${maxSettleTimeoutMs}.`,
      ),
  });
  return defineTool({
    name: 'pty_start',
    description: [
      'Start an interactive program (a REPL, a TUI, a dev server, anything that needs a terminal) in a ' +
        'pseudo-terminal as a background task. Returns its task id at once. Type into it with pty_write, ' +
        'read new output with task_output, stop it with task_kill. For plain commands prefer the bash tool. ' +
        'With run_in_background false the call waits for the program to end and returns its screen.',
      describeSandbox(sandbox)?.replace('Commands run', 'Programs run'),
    ]
      .filter((line) => line !== undefined)
      .join('\n'),
    inputSchema,
    async execute(input, context) {
      if (context.signal.aborted) return abortedBeforeStart('pty_start', context);
      try {
        const base = context.cwd ?? process.cwd();
        const started = await producer.start({
          command: input.command,
          ...(input.description === undefined ? {} : { description: input.description }),
          cwd: resolveWorkdir(base, input.workdir),
          // Writes are allowed under the session's directory, never under a workdir the model names.
          workspace: resolvePath(base),
          ...(sandbox === undefined ? {} : { sandbox }),
          ...(context.env === undefined ? {} : { env: context.env }),
          ...(input.cols === undefined ? {} : { cols: input.cols }),
          ...(input.rows === undefined ? {} : { rows: input.rows }),
          ...(context.caller === undefined ? {} : { owner: context.caller }),
          toolUseId: context.toolCallId,
          ...(input.run_in_background === false ? { background: false } : {}),
        });
        if (input.run_in_background === false) {
          return await runInForeground(
            producer,
            started,
            input.timeout_ms ?? maxSettleTimeoutMs,
            context,
            clock,
          );
        }
        const { taskId } = started;
        const detail = started.snapshot.detail;
        const text =
          `Started pty task ${taskId}${started.pid === undefined ? '' : ` (pid ${started.pid})`} in a ` +
          `${String(detail.cols)}x${String(detail.rows)} terminal: ${started.snapshot.label}\n` +
          `Type into it with pty_write (task_id "${taskId}"), read new output with task_output, ` +
          `stop it with task_kill. Raw output file: ${started.outputFile}`;
        return toolResult<BackgroundToolValue>(text, { kind: 'background', taskId });
      } catch (error) {
        return toolError(describeToolError(error));
      }
    },
  });
}

/**
 * A foreground program: the call waits for its end, bounded by `timeoutMs`, and returns its final screen
 * (the end needs no notification: this answer reports it). Still running at the deadline, it moves to the
 * background in place, as a foreground bash command does, and the answer gives its task id and screen.
 * An aborted call stops the program.
 */
async function runInForeground(
  producer: PtyProducer,
  started: PtyStarted,
  timeoutMs: number,
  context: ToolContext,
  clock: Clock,
) {
  const { taskId } = started;
  const pty = producer.process(taskId, trusted);
  const onAbort = () => {
    producer.tasks.kill(taskId, trusted, 'the tool call was aborted', { initiator: 'user' }).catch(() => {});
  };
  context.signal.addEventListener('abort', onAbort, { once: true });
  try {
    await waitForScreen(pty, () => pty.exit !== undefined, { timeoutMs, signal: context.signal, clock });
  } finally {
    context.signal.removeEventListener('abort', onAbort);
  }
  if (context.signal.aborted) return abortedBeforeStart('pty_start', context);
  const exit = pty.exit;
  if (exit !== undefined) {
    // The registry settles a moment after the program's exit; the claim keeps its end from being notified.
    await producer.tasks.wait(taskId, timeoutMs, trusted);
    try {
      producer.tasks.claim(taskId, trusted);
    } catch {
      // Forgotten meanwhile (its owner was disposed).
    }
    const screen = producer.screen(taskId, trusted);
    pty.markScreenSeen();
    const shown = screenResult(screen, exit, []);
    return toolResult<PtyStartValue>(shown.text, {
      ...(shown.value as PtyScreenValue),
      kind: 'foreground',
      exitCode: exit.exitCode,
      signal: exit.signal,
    });
  }
  producer.tasks.requestBackground(taskId, trusted);
  const screen = producer.screen(taskId, trusted);
  pty.markScreenSeen();
  const text =
    `The program was still running after ${timeoutMs} ms, so it keeps running in the background as ` +
    `${taskId}${started.pid === undefined ? '' : ` (pid ${started.pid})`}. Its screen so far:\n` +
    `${screen.text === '' ? '(empty screen)' : screen.text}\n` +
    `Type into it with pty_write (task_id "${taskId}"), read new output with task_output, stop it with ` +
    'task_kill; you will be notified when it ends.';
  return toolResult<PtyStartValue>(text, { kind: 'background', taskId });
}

export function createPtyWriteTool(producer: PtyProducer): ToolDefinition<PtyWriteInput, PtyScreenValue> {
  const { settleTimeoutMs, maxSettleTimeoutMs, settleQuietMs, clock } = producer.options;
  const inputSchema = z.strictObject({
    task_id: z.string().min(1).describe('The pty task to type into, e.g. "pty-1".'),
    input: z
      .string()
      .optional()
      .describe('Text to type, sent exactly as given. No Enter is added: press it with keys.'),
    keys: z
      .array(z.enum(PTY_KEY_NAMES))
      .max(64)
      .optional()
      .describe(
        'Keys to press after the text, in order, e.g. ["Enter"], ["Ctrl-C"], ["Escape"], ["Up", "Enter"], ["Tab"].',
      ),
    wait_for: z
      .string()
      .min(1)
      .max(1000)
      .optional()
      .describe(
        'Return as soon as this text is on the screen (e.g. a prompt), instead of when output goes quiet.',
      ),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(maxSettleTimeoutMs)
      .optional()
      .describe(`How long to wait for the screen before returning. Default ${settleTimeoutMs}.`),
  });
  return defineTool({
    name: 'pty_write',
    description:
      'Type text and press keys in a running pty task, then return its screen once the output settles ' +
      '(or once wait_for appears). The returned screen counts as read for task_output.',
    inputSchema,
    async execute(input, context) {
      if (context.signal.aborted) return abortedBeforeStart('pty_write', context);
      try {
        producer.write(
          input.task_id,
          {
            ...(input.input === undefined ? {} : { text: input.input }),
            ...(input.keys ? { keys: input.keys } : {}),
          },
          context.caller,
        );
        const pty = producer.process(input.task_id, context.caller);
        const timeoutMs = input.timeout_ms ?? settleTimeoutMs;
        let matched: boolean | undefined;
        if (input.wait_for !== undefined) {
          const needle = input.wait_for;
          matched = await waitForScreen(pty, (screen) => screen.text.includes(needle), {
            timeoutMs,
            signal: context.signal,
            clock,
          });
        } else {
          await waitForQuiet(pty, { quietMs: settleQuietMs, timeoutMs, signal: context.signal, clock });
        }
        const screen = producer.screen(input.task_id, context.caller);
        pty.markScreenSeen();
        const notes: string[] = [];
        if (matched === false)
          notes.push(`${JSON.stringify(input.wait_for)} did not appear within ${timeoutMs} ms`);
        return screenResult(screen, pty.exit, notes, matched);
      } catch (error) {
        return toolError(describeToolError(error));
      }
    },
  });
}

export function createPtyResizeTool(producer: PtyProducer): ToolDefinition<PtyResizeInput, PtyScreenValue> {
  const size = sizeSchemas(producer);
  const inputSchema = z.strictObject({
    task_id: z.string().min(1).describe('The pty task to resize, e.g. "pty-1".'),
    cols: size.cols.describe('New width in columns.'),
    rows: size.rows.describe('New height in rows.'),
  });
  return defineTool({
    name: 'pty_resize',
    description: 'Resize the terminal of a running pty task; the program is told its new size (SIGWINCH).',
    inputSchema,
    async execute(input, context) {
      if (context.signal.aborted) return abortedBeforeStart('pty_resize', context);
      try {
        producer.resize(input.task_id, input.cols, input.rows, context.caller);
        const screen = producer.screen(input.task_id, context.caller);
        const pty = producer.process(input.task_id, context.caller);
        return screenResult(screen, pty.exit, [`resized to ${input.cols}x${input.rows}`]);
      } catch (error) {
        return toolError(describeToolError(error));
      }
    },
  });
}

/** The three pty tools, for a tool list. */
export function createPtyTools(producer: PtyProducer, options: PtyToolsOptions = {}): AnyToolDefinition[] {
  ptyToolsOptions.resolve(options);
  return [createPtyStartTool(producer, options), createPtyWriteTool(producer), createPtyResizeTool(producer)];
}

function screenResult(
  screen: PtyScreenSnapshot,
  exit: PtyExit | undefined,
  notes: readonly string[],
  matched?: boolean,
) {
  const state = exit === undefined ? 'running' : describeExit(exit);
  const facts = [
    `${screen.taskId} ${state}`,
    `${screen.cols}x${screen.rows}`,
    `cursor row ${screen.cursorRow + 1}, column ${screen.cursorColumn + 1}`,
    ...(screen.truncated ? ['top of the screen cut'] : []),
    ...notes,
  ];
  const footer = `[${facts.join(' · ')}]`;
  const text = screen.text === '' ? `(empty screen)\n${footer}` : `${screen.text}\n${footer}`;
  const value: PtyScreenValue = {
    taskId: screen.taskId,
    screen: screen.text,
    cols: screen.cols,
    rows: screen.rows,
    cursorRow: screen.cursorRow,
    cursorColumn: screen.cursorColumn,
    running: exit === undefined,
    ...(matched === undefined ? {} : { matched }),
  };
  return toolResult(text, value);
}

function describeExit(exit: PtyExit): string {
  if (exit.reason === 'spawn_error') return 'could not start';
  if (exit.signal !== null) return `ended by ${exit.signal}`;
  return `exited with code ${exit.exitCode}`;
}
