/**
 * `errand demo`: the whole loop on the built-in scripted model, no keys needed. The model starts a
 * background build, a test run and a dev server (real commands in a scratch workspace), keeps working,
 * receives the build and test results in one batched notification, reads the test output, stops the dev
 * server, and answers. A live panel shows the tasks; the dashboard serves the same runtime.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { createErrandRuntime, type ErrandRuntime } from '../host/index.js';
import { createDashboardServer, type DashboardServer } from '../server/index.js';
import type { ModelRequest, SessionEvent } from '../session/index.js';
import { createMemorySessionStore, DataDirectoryError, ensurePrivateDirectory } from '../store/index.js';
import { type ScriptedReply, type ScriptedStep, scriptedModel } from '../testing/index.js';
import { TaskPanel } from './task-panel.js';

export interface DemoOptions {
  readonly out: Writable & { isTTY?: boolean; columns?: number };
  /** Serve the dashboard for the demo's runtime. Default true. */
  readonly dashboard?: boolean;
  /** Keep the dashboard up after the scenario until SIGINT. Default false. */
  readonly hold?: boolean;
}

const BUILD = [
  'while [ ! -e .go ]; do sleep 0.05; done',
  'for module in tasks registry tools session; do echo "compiling $module"; sleep 0.2; done',
  'mkdir -p dist && echo "built 4 modules into dist/"',
].join('; ');
const TESTS = [
  'while [ ! -e .go ]; do sleep 0.05; done',
  'for suite in ids owners settlement notifications; do echo "✓ $suite"; sleep 0.2; done',
  'echo "4 suites, 12 tests passed"',
].join('; ');
const SERVER =
  'echo "dev server listening on :5173"; while true; do sleep 1; echo "[dev] watching for changes"; done';

/** The subagent's own script: it reads the notes with its own bash and answers. */
function subagentScript(): ScriptedStep[] {
  return [
    { toolCalls: [{ name: 'bash', input: { command: 'head -n 2 notes.md' } }] },
    {
      text: 'Summary: three open items remain (notifications, dashboard, docs); everything else is done.',
      usage: { inputTokens: 180, outputTokens: 22 },
    },
  ];
}

/**
 * After the first turn the model reacts to what arrived: build and test results make it read the test
 * output and stop the dev server; the subagent's result is acknowledged.
 */
function react(request: ModelRequest): ScriptedReply {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') {
    return {
      text: 'Done: the build put 4 modules into dist/, all 12 tests passed, and I stopped the dev server.',
    };
  }
  const arrived = last?.role === 'user' ? last.text : '';
  const blocks = arrived.split('</task-notification>');
  const testsBlock = blocks.find((block) => block.includes('"unit tests"'));
  if (testsBlock || blocks.some((block) => block.includes('"build"'))) {
    const tests = /<task-id>(bash-\d+)<\/task-id>/.exec(testsBlock ?? '')?.[1] ?? 'bash-2';
    return {
      text: 'The build and the tests reported back. I will read the test output and stop the dev server.',
      toolCalls: [
        { name: 'task_output', input: { task_id: tests } },
        { name: 'task_list', input: {} },
        { name: 'task_kill', input: { task_id: 'bash-3', reason: 'no longer needed' } },
      ],
    };
  }
  const summary = /<result>\s*([\s\S]*?)\s*<\/result>/.exec(arrived)?.[1];
  return { text: summary ? `The subagent reports: ${summary}` : 'Noted.' };
}

function demoScript(): ScriptedStep[] {
  return [
    {
      text: 'I will start the build, the tests and the dev server in the background, and ask a subagent to read the notes.',
      toolCalls: [
        { name: 'bash', input: { command: BUILD, description: 'build', run_in_background: true } },
        { name: 'bash', input: { command: TESTS, description: 'unit tests', run_in_background: true } },
        { name: 'bash', input: { command: SERVER, description: 'dev server', run_in_background: true } },
        {
          name: 'agent',
          input: {
            prompt: 'Summarize notes.md in one line.',
            description: 'summarize notes',
            run_in_background: true,
          },
        },
      ],
    },
    {
      text: 'While they run, I will look at the workspace myself.',
      toolCalls: [{ name: 'bash', input: { command: 'ls && wc -w notes.md && touch .go' } }],
    },
    (request: ModelRequest) => {
      const last = request.messages.at(-1);
      const summary =
        last?.role === 'user' ? /<result>\s*([\s\S]*?)\s*<\/result>/.exec(last.text)?.[1] : undefined;
      const heard = summary ? `The subagent already reported: ${summary} ` : '';
      return { text: `${heard}I will wait for the build and the tests.` };
    },
    ...Array.from({ length: 8 }, () => react),
  ];
}

function workspace(): string {
  // The demo keeps everything in a temporary directory: one that cannot be made is named with its cause.
  ensurePrivateDirectory(tmpdir());
  let directory: string;
  try {
    directory = mkdtempSync(join(tmpdir(), 'errand-demo-'));
  } catch (error) {
    throw new DataDirectoryError(tmpdir(), (error as NodeJS.ErrnoException).code, error);
  }
  mkdirSync(join(directory, 'src'));
  writeFileSync(join(directory, 'src', 'index.ts'), 'export const answer = 42;\n');
  writeFileSync(
    join(directory, 'notes.md'),
    '# Notes\nOpen items: notifications, dashboard, docs.\nEverything else is done.\n',
  );
  return directory;
}

function describeEvent(event: SessionEvent): string | undefined {
  switch (event.type) {
    case 'turn-start':
      return event.source === 'background_task'
        ? `\n▶ background results arrived (${event.title}) — the idle agent wakes up`
        : `\n▶ user: ${event.title}`;
    case 'message':
      if (event.message.role === 'assistant' && event.message.content.text) {
        return `  assistant: ${event.message.content.text}`;
      }
      if (event.message.role === 'user' && event.message.visibility === 'model-only') {
        const blocks = (event.message.content.text ?? '').split('\n\n<task-notification>').length;
        const how = event.message.source === 'background_task' ? 'in one message' : 'injected mid-turn';
        return `  ⇐ ${blocks} <task-notification> block(s) ${how}:\n${indent(event.message.content.text ?? '')}`;
      }
      return undefined;
    case 'tool-call-start':
      return `  → ${event.name}(${JSON.stringify(event.input).slice(0, 100)})`;
    case 'tool-call-end':
      return `  ← ${event.name}${event.isError ? ' (error)' : ''}:\n${indent(event.text)}`;
    default:
      return undefined;
  }
}

function indent(text: string): string {
  const lines = text.trimEnd().split('\n');
  const shown =
    lines.length > 14
      ? [...lines.slice(0, 6), `… ${lines.length - 12} more lines …`, ...lines.slice(-6)]
      : lines;
  return shown.map((line) => `      ${line}`).join('\n');
}

export async function runDemo(options: DemoOptions): Promise<number> {
  const { out } = options;
  const cwd = workspace();
  let runtime: ErrandRuntime | undefined;
  let server: DashboardServer | undefined;
  let panel: TaskPanel | undefined;
  try {
    const model = scriptedModel(demoScript());
    runtime = await createErrandRuntime({
      model,
      store: createMemorySessionStore(),
      cwd,
      pty: false,
      subagents: { model: () => scriptedModel(subagentScript()) },
      // Results that land within half a second of each other wake the agent once, in one message (the
      // first of them waits out the window too, rather than waking the agent alone).
      limits: { idleDrainQuietMs: 500, idleDrainMaxDelayMs: 2000, idleDrainLoneAtOnce: false },
      systemPrompt: 'You are the errand demo agent.',
    });
    out.write('errand demo — a scripted agent with real background commands (no API keys needed)\n');
    out.write(`workspace: ${cwd}\n`);
    if (options.dashboard !== false) {
      server = createDashboardServer({ backend: runtime.dashboard, port: 0 });
      const address = await server.listen();
      out.write(`dashboard: ${address.url}\n`);
    }
    panel = new TaskPanel({ tasks: runtime.tasks, out });
    const session = runtime.createSession({ id: 'demo', title: 'errand demo', cwd });
    const finished = new Promise<void>((resolve) => {
      session.on((event) => {
        const line = describeEvent(event);
        if (line) panel?.log(line);
        if (event.type === 'turn-end' && event.text.startsWith('Done:')) resolve();
      });
    });
    await session.send(
      'Build the project and run the tests; keep the dev server up while you look at the notes.',
    );
    await finished;
    // Whatever is still running reports back before the demo ends.
    for (const task of runtime.tasks.list(session.owner)) {
      if (task.status === 'running' || task.status === 'stopping')
        await runtime.tasks.wait(task.id, 30_000, session.owner);
    }
    await session.whenIdle();
    panel.close();
    const tasks = runtime.tasks.list(session.owner).filter((task) => task.isBackgrounded);
    out.write(
      `\n${tasks.length} background tasks, each settled once: ${tasks.map((task) => `${task.id} ${task.status}`).join(', ')}\n`,
    );
    if (options.hold && server) {
      out.write('The dashboard stays up; press Ctrl-C to exit.\n');
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
    }
    return 0;
  } finally {
    panel?.close();
    await server?.close();
    await runtime?.dispose();
    rmSync(cwd, { recursive: true, force: true });
    out.write('demo finished: every process stopped, output files removed\n');
  }
}
