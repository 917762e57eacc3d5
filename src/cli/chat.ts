/**
 * `errand chat`: the agent loop with a real model from an OpenAI-compatible endpoint, in the terminal.
 * Background tasks report back by themselves; `/tasks` lists them, `/stop <id>` stops one, Ctrl-B (or
 * `/bg`) moves the running foreground command to the background.
 */
import { emitKeypressEvents } from 'node:readline';
import { createInterface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import { openAiChatModelFromEnvironment } from '../adapters/index.js';
import { createErrandRuntime } from '../host/index.js';
import type { ModelPort, SessionEvent } from '../session/index.js';
import { createTrustedCaller } from '../tasks/index.js';
import { formatBytes, TaskPanel } from './task-panel.js';

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
  /** Overrides the model from the environment (tests, embedding). */
  readonly model?: ModelPort;
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
    systemPrompt: 'You are a helpful coding agent working in the user\u2019s terminal.',
  });
  const { out } = options;
  const panel = new TaskPanel({ tasks: runtime.tasks, out, live: false });
  const session = options.resume
    ? runtime.resumeSession(options.resume)
    : runtime.createSession({ cwd: options.cwd });
  out.write(`errand chat — model ${model.name}, session ${session.id}\n${HELP}\n`);

  const printEvent = (event: SessionEvent) => {
    switch (event.type) {
      case 'turn-start':
        if (event.source === 'background_task') out.write(`\n[background results: ${event.title}]\n`);
        break;
      case 'tool-call-start':
        out.write(`  → ${event.name} ${JSON.stringify(event.input).slice(0, 160)}\n`);
        break;
      case 'tool-call-end':
        out.write(
          `  ← ${event.name}${event.isError ? ' (error)' : ''}: ${event.text.split('\n')[0]?.slice(0, 160)}\n`,
        );
        break;
      case 'message':
        if (event.message.role === 'assistant' && event.message.content.text) {
          out.write(`assistant: ${event.message.content.text}\n`);
        }
        break;
      case 'turn-end':
        if (event.reason === 'error') out.write(`[turn failed: ${event.error}]\n`);
        if (event.reason === 'interrupted') out.write('[turn interrupted; background tasks keep running]\n');
        break;
    }
  };
  const stopListening = session.on(printEvent);

  const promote = () => {
    const [call] = runtime.bashTool.foregroundCalls();
    if (!call) return out.write('(no foreground command is running)\n');
    const snapshot = runtime.bashTool.promote(call.taskId);
    return out.write(`(moved ${snapshot?.id ?? call.taskId} to the background)\n`);
  };
  if (options.input.isTTY) {
    emitKeypressEvents(options.input);
    options.input.on('keypress', (_text: string, key: { ctrl?: boolean; name?: string } | undefined) => {
      if (key?.ctrl && key.name === 'b') promote();
    });
  }

  const lines = createInterface({
    input: options.input,
    output: out,
    terminal: options.input.isTTY === true,
  });
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
        out.write(`${HELP}\n`);
      } else if (line === '/tasks') {
        const tasks = runtime.tasks.list(session.owner).filter((task) => task.isBackgrounded);
        out.write(tasks.length === 0 ? '(no background tasks)\n' : '');
        for (const task of tasks) {
          const bytes =
            typeof task.detail.outputBytes === 'number' ? ` ${formatBytes(task.detail.outputBytes)}` : '';
          out.write(`${task.id} [${task.kind}] ${task.status}${bytes} — ${task.label}\n`);
        }
      } else if (line.startsWith('/stop')) {
        const id = line.slice('/stop'.length).trim();
        const result = await runtime.stop.stopBackgroundTask(id, { initiator: 'user', caller: person });
        out.write(result.ok ? `(stopping ${id})\n` : `(not stopped: ${result.reason})\n`);
      } else if (line === '/bg') {
        promote();
      } else if (line.startsWith('/')) {
        out.write(`unknown command ${line}\n${HELP}\n`);
      } else {
        // Queued behind whatever runs now; the answer is printed by the event listener.
        session.send(line).catch((error: unknown) => {
          out.write(`[not sent: ${error instanceof Error ? error.message : String(error)}]\n`);
        });
      }
    }
    // Input ended (a pipe): let the queued inputs and the turns they start finish first.
    if (!quit) await session.whenIdle();
  } finally {
    lines.close();
    stopListening();
    panel.close();
    await runtime.dispose();
  }
  return 0;
}
