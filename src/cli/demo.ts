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
import { createMemorySessionStore } from '../store/index.js';
import { lastUserText, type ScriptedStep, scriptedModel } from '../testing/index.js';
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

function demoScript(): ScriptedStep[] {
  return [
    {
      text: 'I will start the build, the tests and the dev server in the background.',
      toolCalls: [
        { name: 'bash', input: { command: BUILD, description: 'build', run_in_background: true } },
        { name: 'bash', input: { command: TESTS, description: 'unit tests', run_in_background: true } },
        { name: 'bash', input: { command: SERVER, description: 'dev server', run_in_background: true } },
      ],
    },
    {
      text: 'While they run, I will look at the notes.',
      toolCalls: [{ name: 'bash', input: { command: 'wc -w notes.md && head -n 2 notes.md && touch .go' } }],
    },
    { text: 'The notes list three open items. I will wait for the build and the tests.' },
    (request: ModelRequest) => {
      const arrived = lastUserText(request);
      const ids = [...arrived.matchAll(/<task-id>(bash-\d+)<\/task-id>/g)].map((match) => match[1]!);
      const testsBlock = arrived
        .split('</task-notification>')
        .find((block) => block.includes('"unit tests"'));
      const tests = /<task-id>(bash-\d+)<\/task-id>/.exec(testsBlock ?? '')?.[1] ?? 'bash-2';
      return {
        text: `The build and the tests reported back (${ids.join(', ')}). I will read the test output and stop the dev server.`,
        toolCalls: [
          { name: 'task_output', input: { task_id: tests } },
          { name: 'task_list', input: {} },
          { name: 'task_kill', input: { task_id: 'bash-3', reason: 'no longer needed' } },
        ],
      };
    },
    {
      text: 'Done: the build put 4 modules into dist/, all 12 tests passed, and I stopped the dev server.',
    },
  ];
}

function workspace(): string {
  const directory = mkdtempSync(join(tmpdir(), 'errand-demo-'));
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
        return `  ⇐ ${blocks} <task-notification> block(s) in one message:\n${indent(event.message.content.text ?? '')}`;
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
      // Results that land within half a second of each other wake the agent once, in one message.
      limits: { idleDrainQuietMs: 500, idleDrainMaxDelayMs: 2000 },
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
