/**
 * `errand chat`: the agent loop with a real model from an OpenAI-compatible endpoint, in the terminal.
 * Background tasks report back by themselves; `/tasks` lists them, `/stop <id>` stops one, Ctrl-B (or
 * `/bg`) moves the running foreground command to the background.
 */
import { clearLine, cursorTo, emitKeypressEvents } from 'node:readline';
import { createInterface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import { openAiChatModelFromEnvironment } from '../adapters/index.js';
import { createErrandRuntime } from '../host/index.js';
import type { ModelPort, Session, SessionEvent } from '../session/index.js';
import { createTrustedCaller, systemClock, type TaskSnapshot } from '../tasks/index.js';
import { formatBytes, SPINNER, TaskPanel } from './task-panel.js';

const person = createTrustedCaller('chat-user');

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
  /** Overrides the model from the environment (tests, embedding). */
  readonly model?: ModelPort;
}

/** The prompt with a live summary of running background work: `⠋ 2 running: bash-1 12s 4.1 KiB … │ you> `. */
export function statusLine(
  tasks: readonly TaskSnapshot[],
  frame: number,
  columns = 100,
  now = systemClock.now(),
): string {
  const running = tasks.filter(
    (task) => task.isBackgrounded && (task.status === 'running' || task.status === 'stopping'),
  );
  if (running.length === 0) return 'you> ';
  const items = running.map((task) => {
    const seconds = Math.round((now - task.startedAt) / 1000);
    const bytes =
      typeof task.detail.outputBytes === 'number' ? ` ${formatBytes(task.detail.outputBytes)}` : '';
    return `${task.id} ${seconds}s${bytes}`;
  });
  let summary = `${SPINNER[frame % SPINNER.length]} ${running.length} running: ${items.join(', ')}`;
  const room = Math.max(20, columns - 12);
  if (summary.length > room) summary = `${summary.slice(0, room - 1)}…`;
  return `${summary} │ you> `;
}

const HELP = `commands: /tasks  /stop <task-id>  /bg (or Ctrl-B)  /help  /quit
Interrupting a turn (Ctrl-C) stops the turn, not the background tasks.`;

export async function runChat(options: ChatOptions): Promise<number> {
  const model = options.model ?? openAiChatModelFromEnvironment(options.env);
  if (!model) {
    options.err.write(
      'errand chat needs a model: set ERRAND_MODEL (and ERRAND_BASE_URL / ERRAND_API_KEY, or OPENAI_BASE_URL / OPENAI_API_KEY) for an OpenAI-compatible endpoint.\n',
    );
    return 2;
  }
  const runtime = await createErrandRuntime({
    model,
    cwd: options.cwd,
    ...(options.home ? { home: options.home } : {}),
    ...(options.durable ? { durable: true } : {}),
    systemPrompt: 'You are a helpful coding agent working in the user\u2019s terminal.',
  });
  const { out } = options;
  const terminal = options.input.isTTY === true && out.isTTY === true;
  // On a terminal the prompt line is the live panel; elsewhere each status change is printed.
  const panel = terminal ? undefined : new TaskPanel({ tasks: runtime.tasks, out, live: false });
  let lines: ReturnType<typeof createInterface> | undefined;
  const print = (text: string) => {
    if (!terminal || !lines) {
      out.write(text);
      return;
    }
    clearLine(out, 0);
    cursorTo(out, 0);
    out.write(text);
    lines.prompt(true);
  };
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
  print(`errand chat — model ${model.name}, session ${session.id}\n${HELP}\n`);

  const printEvent = (event: SessionEvent) => {
    switch (event.type) {
      case 'turn-start':
        if (event.source === 'background_task') print(`\n[background results: ${event.title}]\n`);
        break;
      case 'tool-call-start':
        print(`  → ${event.name} ${JSON.stringify(event.input).slice(0, 160)}\n`);
        break;
      case 'tool-call-end':
        print(
          `  ← ${event.name}${event.isError ? ' (error)' : ''}: ${event.text.split('\n')[0]?.slice(0, 160)}\n`,
        );
        break;
      case 'message':
        if (event.message.role === 'assistant' && event.message.content.text) {
          print(`assistant: ${event.message.content.text}\n`);
        }
        break;
      case 'turn-end':
        if (event.reason === 'error') print(`[turn failed: ${event.error}]\n`);
        if (event.reason === 'interrupted') print('[turn interrupted; background tasks keep running]\n');
        break;
    }
  };
  const stopListening = session.on(printEvent);

  const promote = () => {
    const [call] = runtime.bashTool.foregroundCalls();
    if (!call) return print('(no foreground command is running)\n');
    const snapshot = runtime.bashTool.promote(call.taskId);
    return print(`(moved ${snapshot?.id ?? call.taskId} to the background)\n`);
  };
  if (options.input.isTTY) {
    emitKeypressEvents(options.input);
    options.input.on('keypress', (_text: string, key: { ctrl?: boolean; name?: string } | undefined) => {
      if (key?.ctrl && key.name === 'b') promote();
    });
  }

  lines = createInterface({ input: options.input, output: out, terminal });
  let statusTimer: NodeJS.Timeout | undefined;
  if (terminal) {
    lines.setPrompt(statusLine(runtime.tasks.list(session.owner), 0));
    lines.prompt();
    let frame = 0;
    statusTimer = setInterval(() => {
      frame += 1;
      lines?.setPrompt(statusLine(runtime.tasks.list(session.owner), frame, out.columns));
      lines?.prompt(true);
    }, 250);
    statusTimer.unref();
  }
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
        print(`${HELP}\n`);
      } else if (line === '/tasks') {
        const tasks = runtime.tasks.list(session.owner).filter((task) => task.isBackgrounded);
        print(tasks.length === 0 ? '(no background tasks)\n' : '');
        for (const task of tasks) {
          const bytes =
            typeof task.detail.outputBytes === 'number' ? ` ${formatBytes(task.detail.outputBytes)}` : '';
          print(`${task.id} [${task.kind}] ${task.status}${bytes} — ${task.label}\n`);
        }
      } else if (line.startsWith('/stop')) {
        const id = line.slice('/stop'.length).trim();
        const result = await runtime.stop.stopBackgroundTask(id, { initiator: 'user', caller: person });
        print(result.ok ? `(stopping ${id})\n` : `(not stopped: ${result.reason})\n`);
      } else if (line === '/bg') {
        promote();
      } else if (line.startsWith('/')) {
        print(`unknown command ${line}\n${HELP}\n`);
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
    if (statusTimer) clearInterval(statusTimer);
    lines.close();
    stopListening();
    panel?.close();
    await runtime.dispose();
  }
  return 0;
}
