/**
 * `errand chat`: the agent loop with a real model from an OpenAI-compatible endpoint, in the terminal.
 * Replies appear as they are generated (a streamed reply), background tasks report back by themselves;
 * `/tasks` lists them, `/stop <id>` stops one, `/stop all` every one of the session, Ctrl-B (or `/bg`)
 * moves the running foreground command to the background. On a terminal, a live panel of the running
 * background work sits above the prompt, one line per task.
 */
import { clearScreenDown, cursorTo, emitKeypressEvents, moveCursor } from 'node:readline';
import { createInterface, type Interface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import { openAiChatModelFromEnvironment } from '../adapters/index.js';
import { createErrandRuntime, type ErrandRuntime } from '../host/index.js';
import type { PersonNotifierOptions } from '../notify-person/index.js';
import type { ResourceLimitOptions, SandboxOptions } from '../process/index.js';
import type { ModelPort, Session, SessionEvent } from '../session/index.js';
import { createTrustedCaller, ErrandError, systemClock } from '../tasks/index.js';
import { shortenText, toSingleLine } from '../text/index.js';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
import { LIMIT_FLAGS, resourceLimitsFromFlags } from './limit-flags.js';
import { NOTIFY_FLAGS, notifyOptionsFromFlags } from './notify-flags.js';
import { REDIS_FLAGS, redisOption } from './redis-flags.js';
import { SANDBOX_FLAGS, sandboxFromFlags } from './sandbox-flags.js';
import { formatBytes, runningTaskRows, TaskPanel } from './task-panel.js';
import { TaskView } from './task-view.js';

const person = createTrustedCaller('chat-user');

export const CHAT_FLAGS: FlagSpecs = {
  cwd: {
    type: 'directory',
    placeholder: '<dir>',
    description: 'where commands run (default: the current directory)',
  },
  home: {
    type: 'path',
    placeholder: '<dir>',
    description: 'the data directory (default: $ERRAND_HOME, else ~/.errand)',
  },
  resume: {
    type: 'string',
    placeholder: '<session-id>',
    description: 'continue a stored session instead of starting a new one',
  },
  durable: {
    type: 'boolean',
    description: 'background commands keep running if chat exits or dies; --resume re-attaches them',
  },
  ...SANDBOX_FLAGS,
  ...LIMIT_FLAGS,
  ...REDIS_FLAGS,
  ...NOTIFY_FLAGS,
};

const COMMANDS_HELP = `commands: /tasks (or Ctrl-T)  /stop <task-id>  /stop all  /bg (or Ctrl-B)  /help  /quit
Interrupting a turn (Ctrl-C) stops the turn, not the background tasks.`;

export const CHAT_USAGE = `Usage: errand chat [options]

The agent loop in the terminal with a model from an OpenAI-compatible endpoint: commands it starts in
the background report back by themselves, and a live panel shows them while they run.

Environment:
  ERRAND_MODEL      the model name (required), e.g. gpt-4.1
  ERRAND_BASE_URL   the API root (or OPENAI_BASE_URL; default https://api.openai.com/v1)
  ERRAND_API_KEY    the API key (or OPENAI_API_KEY)
  ERRAND_STREAM=0   wait for whole replies instead of streaming them

Options:
${describeFlags(CHAT_FLAGS)}

In the chat:
${COMMANDS_HELP}
`;

/** Task rows the live panel shows at most; the rest are counted. */
export const PANEL_MAX_ROWS = 6;
/** How often the live panel is redrawn (spinner, elapsed time, bytes). */
const PANEL_REDRAW_MS = 250;

export interface ChatOptions {
  readonly input: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  readonly out: Writable & { isTTY?: boolean; columns?: number };
  readonly err: Writable;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly home?: string;
  /** Continue a stored session instead of starting a new one. */
  readonly resume?: string;
  /**
   * Background commands are durable: they keep running if chat exits or dies, and `--resume` of the
   * session re-attaches them (same ids, output from where the model left off, one notification each).
   */
  readonly durable?: boolean;
  /** Background commands run on `errand worker`s through this Redis (`--redis`). */
  readonly redis?: { readonly url: string; readonly prefix?: string };
  /** Notifications for the person (`--notify-*`): a webhook, the desktop. Default: none. */
  readonly notifyPerson?: Omit<PersonNotifierOptions, 'feed'>;
  /** Overrides the model from the environment (tests, embedding); its replies are not streamed here. */
  readonly model?: ModelPort;
  /** The sandbox commands run in (`--sandbox`, `--no-network`). Default: none. */
  readonly sandbox?: SandboxOptions;
  /** Resource limits of commands (`--memory-limit`, `--pids-limit`, ...). Default: none. */
  readonly resourceLimits?: ResourceLimitOptions;
}

/** `errand chat [flags]`: parses the flags (`--help` needs no model) and runs the chat. */
export async function runChatCommand(
  argv: readonly string[],
  io: Omit<ChatOptions, 'cwd' | 'home' | 'resume' | 'durable' | 'sandbox' | 'resourceLimits' | 'redis'> & {
    readonly cwd: string;
  },
): Promise<number> {
  let values: Record<string, unknown>;
  let sandbox: SandboxOptions | undefined;
  let resourceLimits: ResourceLimitOptions | undefined;
  let redis: ReturnType<typeof redisOption>;
  let notify: ReturnType<typeof notifyOptionsFromFlags>;
  try {
    const parsed = parseFlags(argv, CHAT_FLAGS, io.cwd);
    if (parsed.help) {
      io.out.write(CHAT_USAGE);
      return 0;
    }
    values = parsed.values;
    sandbox = sandboxFromFlags(values);
    resourceLimits = resourceLimitsFromFlags(values);
    redis = redisOption(values);
    notify = notifyOptionsFromFlags(values, process.env, { browser: false });
  } catch (error) {
    if (error instanceof UsageError) {
      io.err.write(`errand chat: ${error.message}\n\n${CHAT_USAGE}`);
      return error.exitCode;
    }
    throw error;
  }
  return runChat({
    ...io,
    cwd: typeof values.cwd === 'string' ? values.cwd : io.cwd,
    ...(typeof values.home === 'string' ? { home: values.home } : {}),
    ...(typeof values.resume === 'string' ? { resume: values.resume } : {}),
    ...(values.durable === true ? { durable: true } : {}),
    ...(sandbox === undefined ? {} : { sandbox }),
    ...(resourceLimits === undefined ? {} : { resourceLimits }),
    ...(redis ? { redis } : {}),
    ...(notify ? { notifyPerson: notify } : {}),
  });
}

/**
 * The terminal's live region: the reply being streamed (its unfinished last line), the panel of running
 * background work, and the prompt, redrawn in place by readline as one multi-line prompt. Text printed
 * above it (finished lines) scrolls away as usual.
 */
class LiveRegion {
  readonly #out: ChatOptions['out'];
  readonly #lines: Interface;
  readonly #panel: () => string[];
  /** The streamed reply's unfinished last line, or undefined when no reply streams. */
  #partial: string | undefined;
  /** The region is on the screen where readline thinks it is (not after a line was taken). */
  #drawn = false;
  /** The prompt last drawn: the region's rows above the input, and `you> `. */
  #prompt = 'you> ';

  constructor(out: ChatOptions['out'], lines: Interface, panel: () => string[]) {
    this.#out = out;
    this.#lines = lines;
    this.#panel = panel;
    // Enter leaves the region on screen with the typed line and moves below it: the region is replaced by
    // the typed line alone, and drawn anew below it.
    lines.on('line', (line: string) => {
      if (this.#drawn) {
        moveCursor(this.#out, 0, -displayRows(`${this.#prompt}${line}`, this.#out.columns ?? 80));
        cursorTo(this.#out, 0);
        clearScreenDown(this.#out);
        this.#out.write(`you> ${line}\n`);
      }
      this.#drawn = false;
      this.redraw();
    });
  }

  get streaming(): boolean {
    return this.#partial !== undefined;
  }

  /** Redraws the region (the panel changed, or a piece of reply arrived). */
  redraw(): void {
    const above = [...(this.#partial === undefined ? [] : [this.#partial]), ...this.#panel()];
    this.#prompt = above.length === 0 ? 'you> ' : `${above.join('\n')}\nyou> `;
    this.#lines.setPrompt(this.#prompt);
    this.#lines.prompt(true);
    this.#drawn = true;
  }

  /** Prints finished lines above the region. */
  print(text: string): void {
    // Up to the region's first row, clear it, print, then let readline draw it again below the text. It
    // moves up by as many rows as the cursor sat below the prompt's start: blank lines make room for that.
    const rows = this.#drawn ? this.#lines.getCursorPos().rows : 0;
    if (rows > 0) moveCursor(this.#out, 0, -rows);
    cursorTo(this.#out, 0);
    clearScreenDown(this.#out);
    this.#out.write(text.endsWith('\n') ? text : `${text}\n`);
    if (rows > 0) this.#out.write('\n'.repeat(rows));
    this.redraw();
  }

  /** A piece of the reply: finished lines go above, the unfinished one stays in the region. */
  append(piece: string): void {
    let text = `${this.#partial ?? 'assistant: '}${piece}`;
    const end = text.lastIndexOf('\n');
    if (end >= 0) {
      this.#partial = text.slice(end + 1);
      this.print(text.slice(0, end + 1));
      text = this.#partial;
    }
    this.#partial = text;
    this.redraw();
  }

  /** The reply ended: its last line is printed for good. */
  finishReply(suffix = ''): void {
    if (this.#partial === undefined) return;
    const last = this.#partial;
    this.#partial = undefined;
    this.print(`${last}${suffix}`);
  }
}

export async function runChat(options: ChatOptions): Promise<number> {
  const { out } = options;
  const terminal = options.input.isTTY === true && out.isTTY === true;
  /** Receives the reply's pieces once the chat is set up (the model exists before it). */
  let onPiece: (piece: string) => void = () => {};
  const model =
    options.model ?? openAiChatModelFromEnvironment(options.env, { onTextDelta: (piece) => onPiece(piece) });
  if (!model) {
    options.err.write(
      'errand chat needs a model: set ERRAND_MODEL (and ERRAND_BASE_URL / ERRAND_API_KEY, or OPENAI_BASE_URL / OPENAI_API_KEY) for an OpenAI-compatible endpoint. See errand chat --help.\n',
    );
    return 2;
  }
  // Subagents talk to the same endpoint without printing into the chat.
  const subagentModel = options.model ?? openAiChatModelFromEnvironment(options.env);
  /** Warnings go where the chat prints, so they never break the live region; bound once it exists. */
  const warn: (line: string) => void = (line) => options.err.write(line);
  let runtime: ErrandRuntime;
  try {
    runtime = await createErrandRuntime({
      model,
      logger: { warn: (message) => warn(`[warning: ${message}]\n`) },
      cwd: options.cwd,
      ...(options.home ? { home: options.home } : {}),
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
      ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
      ...(subagentModel ? { subagents: { model: subagentModel } } : {}),
      ...(options.durable ? { durable: true } : {}),
      ...(options.redis ? { redis: options.redis } : {}),
      ...(options.notifyPerson ? { notifyPerson: options.notifyPerson } : {}),
      systemPrompt: 'You are a helpful coding agent working in the user\u2019s terminal.',
    });
  } catch (error) {
    // A sandbox that cannot be set up is said plainly; the chat never runs commands unconfined instead.
    if (
      ErrandError.hasCode(error, 'SANDBOX_UNAVAILABLE') ||
      ErrandError.hasCode(error, 'LIMITS_UNAVAILABLE')
    ) {
      options.err.write(`errand chat: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  let session: Session;
  try {
    session = options.resume
      ? runtime.resumeSession(options.resume)
      : runtime.createSession({ cwd: options.cwd });
  } catch (error) {
    // An unknown session, or one another runtime still has open (SESSION_IN_USE): say so and leave cleanly.
    options.err.write(`errand chat: ${error instanceof Error ? error.message : String(error)}\n`);
    await runtime.dispose();
    return 1;
  }
  return terminal
    ? chatOnTerminal(options, runtime, session, model, (handler) => {
        onPiece = handler;
      })
    : chatOnPipe(options, runtime, session, model, (handler) => {
        onPiece = handler;
      });
}

/** Hands the chat's reply printer and line printer to what was built before them (model, logger). */
type PieceSink = (handler: (piece: string) => void, print: (line: string) => void) => void;

/** Without a terminal: every line is printed as it comes, status changes as lines of their own. */
async function chatOnPipe(
  options: ChatOptions,
  runtime: ErrandRuntime,
  session: Session,
  model: ModelPort,
  sink: PieceSink,
): Promise<number> {
  const { out } = options;
  const panel = new TaskPanel({ tasks: runtime.tasks, out, live: false });
  let midReply = false;
  const print = (text: string) => {
    if (midReply) {
      out.write('\n');
      midReply = false;
    }
    out.write(text);
  };
  sink((piece) => {
    if (!midReply) out.write('assistant: ');
    midReply = true;
    out.write(piece);
  }, print);
  const endReply = () => {
    if (!midReply) return false;
    out.write('\n');
    midReply = false;
    return true;
  };
  const lines = createInterface({ input: options.input, output: out, terminal: false });
  return converse(runtime, session, model, lines, { print, endReply }, () => panel.close());
}

/** On a terminal: the live region (streamed reply, panel, prompt) redrawn in place. */
async function chatOnTerminal(
  options: ChatOptions,
  runtime: ErrandRuntime,
  session: Session,
  model: ModelPort,
  sink: PieceSink,
): Promise<number> {
  const { out } = options;
  const lines = createInterface({ input: options.input, output: out, terminal: true });
  let frame = 0;
  const { input } = options;
  /** readline's own key listeners, set aside while the task view takes the keys. */
  let setAside: Array<(...args: unknown[]) => void> = [];
  const view = new TaskView({
    list: () => runtime.tasks.list(session.owner).filter((task) => task.isBackgrounded),
    output: (taskId) => runtime.outputSnapshot(taskId, TASK_VIEW_OUTPUT_BYTES)?.text,
    stop: async (taskId) => {
      const result = await runtime.stop.stopBackgroundTask(taskId, { initiator: 'user', caller: person });
      return result.ok ? `(stopping ${taskId})\n` : `(not stopped: ${result.reason})\n`;
    },
    print: (text) => region.print(text),
    changed: () => region.redraw(),
    closed: () => {
      for (const listener of setAside) input.on('keypress', listener);
      setAside = [];
    },
    now: systemClock.now,
  });
  const openView = () => {
    if (view.isOpen) return;
    // The view's keys (arrows, Enter, Esc, s, y) must not reach the prompt's line editor meanwhile.
    setAside = input.listeners('keypress').filter((listener) => listener !== onKey) as typeof setAside;
    for (const listener of setAside) input.off('keypress', listener);
    view.open();
  };
  const region = new LiveRegion(out, lines, () =>
    view.isOpen
      ? view.rows(out.columns ?? 100, taskViewHeight(out), frame)
      : runningTaskRows(runtime.tasks.list(session.owner), {
          frame,
          columns: out.columns ?? 100,
          now: systemClock.now(),
          maxRows: PANEL_MAX_ROWS,
        }),
  );
  sink(
    (piece) => region.append(piece),
    (line) => region.print(line),
  );
  const timer = setInterval(() => {
    frame += 1;
    region.redraw();
  }, PANEL_REDRAW_MS);
  timer.unref();
  region.redraw();
  const endReply = () => {
    if (!region.streaming) return false;
    region.finishReply();
    return true;
  };
  emitKeypressEvents(options.input);
  const onKey = (_text: string, key: { ctrl?: boolean; name?: string; sequence?: string } | undefined) => {
    if (view.isOpen) view.key(key ?? { sequence: _text });
    else if (key?.ctrl && key.name === 'b') region.print(promote(runtime));
    else if (key?.ctrl && key.name === 't') openView();
  };
  options.input.on('keypress', onKey);
  return converse(
    runtime,
    session,
    model,
    lines,
    {
      print: (text) => region.print(text),
      endReply,
      interrupted: () => region.finishReply(' [interrupted]'),
    },
    () => {
      clearInterval(timer);
      view.close();
      options.input.off('keypress', onKey);
    },
    openView,
  );
}

/** A tool call in one short line: what it says it does, and the command it runs (else its input). */
function describeCall(input: unknown): string {
  const fields = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
  const description = typeof fields.description === 'string' ? fields.description : undefined;
  const command = typeof fields.command === 'string' ? fields.command : undefined;
  const text =
    command === undefined
      ? JSON.stringify(input)
      : description === undefined
        ? command
        : `${description}: ${command}`;
  return shortenText(toSingleLine(text), 140);
}

/** Output bytes the task view reads for one task: its scroll-back. */
const TASK_VIEW_OUTPUT_BYTES = 64 * 1024;

/** Rows the task view may take above the prompt: the terminal's height less room for the reply and prompt. */
function taskViewHeight(out: ChatOptions['out']): number {
  const rows = (out as { rows?: number }).rows ?? 24;
  return Math.max(4, rows - 6);
}

/** The terminal rows `text` takes at `columns` (each line at least one; long lines wrap). */
function displayRows(text: string, columns: number): number {
  let rows = 0;
  for (const line of text.split('\n')) rows += Math.max(1, Math.ceil([...line].length / columns));
  return rows;
}

interface Printer {
  print(text: string): void;
  /** Ends a streamed reply; false when none was streaming (the reply is printed whole). */
  endReply(): boolean;
  interrupted?(): void;
}

/** Moves the running foreground command (else subagent) to the background; says what happened. */
function promote(runtime: ErrandRuntime): string {
  for (const tool of [runtime.bashTool, runtime.agentTool]) {
    const [call] = tool?.foregroundCalls() ?? [];
    if (!call || !tool) continue;
    const snapshot = tool.promote(call.taskId);
    return `(moved ${snapshot?.id ?? call.taskId} to the background)\n`;
  }
  return '(no foreground command is running)\n';
}

async function stopAll(runtime: ErrandRuntime, session: Session): Promise<string> {
  const entries = await runtime.stop.stopAll({
    initiator: 'user',
    caller: person,
    filter: (task) => task.isBackgrounded && task.ownerSessionId === session.id,
  });
  if (entries.length === 0) return '(no background work is running)\n';
  const stopped = entries.filter((entry) => entry.result?.ok === true).map((entry) => entry.taskId);
  const refused = entries
    .filter((entry) => entry.result?.ok !== true)
    .map((entry) =>
      entry.result && !entry.result.ok
        ? `${entry.taskId}: ${entry.result.reason}`
        : `${entry.taskId}: ${entry.error instanceof Error ? entry.error.message : String(entry.error)}`,
    );
  return [
    stopped.length > 0 ? `(stopping ${stopped.join(', ')})` : '',
    refused.length > 0 ? `(not stopped: ${refused.join('; ')})` : '',
  ]
    .filter((line) => line !== '')
    .map((line) => `${line}\n`)
    .join('');
}

/** The conversation itself, the same on a terminal and on a pipe. */
async function converse(
  runtime: ErrandRuntime,
  session: Session,
  model: ModelPort,
  lines: Interface,
  printer: Printer,
  release: () => void,
  /** On a terminal, `/tasks` opens the task view; on a pipe it prints the list. */
  openTaskView?: () => void,
): Promise<number> {
  const { print } = printer;
  print(`errand chat — model ${model.name}, session ${session.id}\n${COMMANDS_HELP}\n`);
  const printEvent = (event: SessionEvent) => {
    switch (event.type) {
      case 'turn-start':
        if (event.source === 'background_task') print(`[background results: ${event.title}]\n`);
        break;
      case 'tool-call-start':
        print(`  → ${event.name} ${describeCall(event.input)}\n`);
        break;
      case 'tool-call-end':
        print(
          `  ← ${event.name}${event.isError ? ' (error)' : ''}: ${event.text.split('\n')[0]?.slice(0, 160)}\n`,
        );
        break;
      case 'message':
        if (event.message.role !== 'assistant') break;
        // A streamed reply is on screen already; a whole one is printed now.
        if (!printer.endReply() && event.message.content.text) {
          print(`assistant: ${event.message.content.text}\n`);
        }
        break;
      case 'turn-end':
        if (event.reason === 'interrupted') printer.interrupted?.();
        else printer.endReply();
        if (event.reason === 'error') print(`[turn failed: ${event.error}]\n`);
        if (event.reason === 'interrupted') print('[turn interrupted; background tasks keep running]\n');
        break;
    }
  };
  const stopListening = session.on(printEvent);
  lines.on('SIGINT', () => {
    if (!session.interrupt('interrupted by the user')) lines.close();
  });
  let quit = false;
  try {
    for await (const raw of lines) {
      const line = raw.trim();
      if (line === '') continue;
      if (line === '/quit' || line === '/exit') {
        quit = true;
        break;
      }
      if (line === '/help') {
        print(`${COMMANDS_HELP}\n`);
      } else if (line === '/tasks' && openTaskView) {
        openTaskView();
      } else if (line === '/tasks') {
        const tasks = runtime.tasks.list(session.owner).filter((task) => task.isBackgrounded);
        if (tasks.length === 0) print('(no background tasks)\n');
        for (const task of tasks) {
          const bytes =
            typeof task.detail.outputBytes === 'number' ? ` ${formatBytes(task.detail.outputBytes)}` : '';
          print(`${task.id} [${task.kind}] ${task.status}${bytes} — ${task.label}\n`);
        }
      } else if (line === '/stop all') {
        print(await stopAll(runtime, session));
      } else if (line === '/stop' || line.startsWith('/stop ')) {
        const id = line.slice('/stop'.length).trim();
        if (id === '') {
          print('(usage: /stop <task-id>, or /stop all)\n');
        } else {
          const result = await runtime.stop.stopBackgroundTask(id, { initiator: 'user', caller: person });
          print(result.ok ? `(stopping ${id})\n` : `(not stopped: ${result.reason})\n`);
        }
      } else if (line === '/bg') {
        print(promote(runtime));
      } else if (line.startsWith('/')) {
        print(`unknown command ${line}\n${COMMANDS_HELP}\n`);
      } else {
        // Queued behind whatever runs now; the answer is printed by the event listener.
        session.send(line).catch((error: unknown) => {
          print(`[not sent: ${error instanceof Error ? error.message : String(error)}]\n`);
        });
      }
    }
    // Input ended (a pipe): let the queued inputs and the turns they start finish first.
    if (!quit) await session.whenIdle();
  } finally {
    release();
    lines.close();
    stopListening();
    await runtime.dispose();
  }
  return 0;
}
