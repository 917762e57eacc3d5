/**
 * A real client's conversation compacted while background work runs, in a pseudo-terminal, against a
 * scripted model on 127.0.0.1, with `errand install <client>`: the model starts three background jobs
 * and ends its turn; the person types the client's compaction command (`/compact`, Gemini CLI's
 * `/compress`), then a question. The first model request after the compaction must carry the task
 * digest (`<task-digest>`) once, naming every live task once — through Claude Code's and Codex's
 * `SessionStart` (`source: compact`), or, in Gemini CLI (whose `PreCompress` cannot reach the model),
 * the next prompt's hook after `PreCompress` marked it due.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  claudeCodeEnvironment,
  findClaudeCode,
  installForClaudeCode,
} from '../../test/support/claude-code.js';
import {
  type ClientBox,
  clientArgs,
  clientBox,
  clientEnvironment,
  clientShell,
  findErrandBash,
  findRealClient,
  installClient,
  pollUntil,
  processesNaming,
} from '../../test/support/real-clients.js';
import {
  type ModelReply,
  type ModelRequest,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../../test/support/scripted-model-server.js';
import { spawnInTerminal, type TerminalProgram } from '../../test/support/terminal.js';

type Client = 'claude-code' | 'codex' | 'gemini';

const executables: Record<Client, string | undefined> = {
  'claude-code': findClaudeCode(),
  codex: findRealClient('codex'),
  gemini: findRealClient('gemini'),
};

const boxes: ClientBox[] = [];
const servers: ScriptedModelServer[] = [];
const terminals: TerminalProgram[] = [];

afterEach(async () => {
  for (const terminal of terminals.splice(0)) {
    terminal.kill();
    await terminal.exited;
  }
  // The killed client's errand mcp stops its jobs (its stdin closed; the lifeline within 2 s).
  await until(
    () => processesNaming(`digest-job-${process.pid}-`).length === 0,
    'the jobs to stop',
    20_000,
  ).catch(() => undefined);
  for (const server of servers.splice(0)) await server.close();
  for (const box of boxes.splice(0)) rmSync(box.root, { recursive: true, force: true });
});

const JOBS = 3;
const MAX_PAUSES = 120;
/** The question typed after the compaction (no `?`: Gemini CLI's prompt takes it for its shortcuts help). */
const QUESTION = 'Tell me what is running now.';

const until = pollUntil;

/** The `<task-digest>` blocks in a request's raw body (JSON-escaped or not). */
function digestsIn(raw: string): string[] {
  return [
    ...raw.matchAll(
      /(?:<|&lt;|\\u003c)task-digest(?:>|&gt;|\\u003e)([\s\S]*?)(?:<|&lt;|\\u003c)\/task-digest/g,
    ),
  ].map((match) => match[1] as string);
}

const pauseOf = (client: Client): ModelReply =>
  client === 'claude-code'
    ? { kind: 'tool', name: 'Bash', args: { command: 'sleep 0.25', description: 'wait a moment' } }
    : clientShell(client, 0.25);

async function startClient(
  client: Client,
  box: ClientBox,
  model: ScriptedModelServer,
): Promise<TerminalProgram> {
  const prompt = 'Start the three builds.';
  if (client === 'claude-code') {
    await installForClaudeCode(box.userHome, box.errandHome, box.work);
    return spawnInTerminal(
      executables[client] as string,
      ['--allowedTools', 'mcp__errand__bash,Bash', '--model', 'claude-sonnet-4-5', prompt],
      {
        cwd: box.work,
        env: claudeCodeEnvironment(box.userHome, model.origin) as Record<string, string>,
        cols: 120,
        rows: 40,
      },
    );
  }
  // A short end-of-turn wait: the turn ends (after one reminder) while the jobs run, so it can compact.
  await installClient(client, box, model.origin, ['--stop-wait-ms', '2000']);
  return spawnInTerminal(executables[client] as string, clientArgs(client, 'interactive', prompt), {
    cwd: box.work,
    env: clientEnvironment(client, box, model.origin) as Record<string, string>,
    cols: 120,
    rows: 40,
  });
}

for (const client of ['claude-code', 'codex', 'gemini'] as const) {
  describe.skipIf(executables[client] === undefined)(`${client}: a compaction with live tasks`, () => {
    it('the first request after it carries the task digest once, naming every live task once', async () => {
      const box = clientBox('errand-cp-');
      boxes.push(box);
      const marker = `digest-job-${process.pid}-${Date.now()}`;
      let started = 0;
      let pauses = 0;
      let phase: 'start' | 'compacting' = 'start';
      /** Main requests while compacting that are not the question: the compaction's own. */
      let summaries = 0;
      /** Codex and Gemini CLI: the end of the turn reminded the model of the running jobs (it ends next). */
      let reminded = false;
      const after: ModelRequest[] = [];
      const model = await startScriptedModelServer((request) => {
        if (phase === 'compacting') {
          if (request.raw.includes(QUESTION)) {
            after.push(request);
            return { kind: 'text', text: 'Three builds run.' };
          }
          summaries += 1;
          return { kind: 'text', text: 'Summary: the user asked for three builds, and they were started.' };
        }
        if (started < JOBS) {
          const name =
            client === 'claude-code'
              ? request.tools.find((tool) => tool === 'mcp__errand__bash')
              : findErrandBash(request.tools);
          if (name === undefined) {
            pauses += 1;
            if (pauses > MAX_PAUSES) throw new Error(`no errand bash among ${request.tools.join(', ')}`);
            return pauseOf(client);
          }
          started += 1;
          return {
            kind: 'tool',
            name,
            args: {
              command: `sleep 600; echo ${marker}-${started}`,
              description: `build ${started}`,
              run_in_background: true,
            },
          };
        }
        if (request.raw.includes('Background work you started is still running:')) reminded = true;
        return { kind: 'text', text: 'The three builds run in the background.' };
      });
      servers.push(model);
      const terminal = await startClient(client, box, model);
      terminals.push(terminal);
      await terminal.waitFor(
        (screen) => screen.includes('three builds run in the background'),
        'the final answer',
        120_000,
      );
      if (client !== 'claude-code') {
        await until(() => reminded, 'the reminder at the end of the turn', 60_000);
        // Codex says how long the turn worked once it is over; neither takes a command while a hook runs.
        await terminal.waitFor(
          (screen) =>
            !/Working \(|Running hook|Executing Hook/.test(screen) &&
            (client !== 'codex' || screen.includes('Worked for')),
          'the turn to end',
          60_000,
        );
        await new Promise((resolvePromise) => setTimeout(resolvePromise, 2_000));
      }
      phase = 'compacting';
      const requestsBefore = model.requests.length;
      terminal.write(client === 'gemini' ? '/compress' : '/compact');
      await new Promise((resolvePromise) => setTimeout(resolvePromise, 500));
      terminal.write('\r');
      // Gemini CLI's completion menu may take an Enter (it completes the command): Enter until it runs.
      for (let attempt = 0; attempt < 5 && model.requests.length === requestsBefore; attempt += 1) {
        await new Promise((resolvePromise) => setTimeout(resolvePromise, 1_500));
        if (
          model.requests.length === requestsBefore &&
          /\* \/compress|> \/compress\s*$/m.test(terminal.screen())
        ) {
          terminal.write('\r');
        }
      }
      await until(() => model.requests.length > requestsBefore, 'the compaction request', 60_000).catch(
        (error: Error) => {
          throw new Error(`${error.message}; the screen:\n${terminal.screen()}`);
        },
      );
      // The compaction ends (its hooks run); then the person asks.
      await new Promise((resolvePromise) => setTimeout(resolvePromise, 8_000));
      const compactedScreen = terminal.screen();
      terminal.write(QUESTION);
      await new Promise((resolvePromise) => setTimeout(resolvePromise, 500));
      terminal.write('\r');
      await until(
        () => after.some((request) => request.raw.includes(QUESTION)),
        'the question',
        60_000,
      ).catch((error: Error) => {
        throw new Error(
          `${error.message}; after the compaction:\n${compactedScreen}\nnow:\n${terminal.screen()}`,
        );
      });
      const next = after.find((request) => request.raw.includes(QUESTION)) as ModelRequest;
      const digests = digestsIn(next.raw);
      expect(
        digests,
        `after the compaction (${summaries} summary request(s)) the screen was:\n${compactedScreen}`,
      ).toHaveLength(1);
      const ids = ['bash-1', 'bash-2', 'bash-3'];
      const named = ids.map((id) => (digests[0] ?? '').split(id).length - 1);
      expect(named).toEqual([1, 1, 1]);
      process.stderr.write(
        `${client} compaction with ${JOBS} live tasks: the first request after it carried ${digests.length} task digest naming each task ${named.join('/')} time(s); in its whole conversation (tool descriptions aside): ${ids.map((id) => conversationOf(next).split(id).length - 1).join('/')}\n`,
      );
    }, 300_000);
  });
}

/** The request's conversation (its messages, not its tool descriptions, which name example ids). */
function conversationOf(request: ModelRequest): string {
  const body = request.body;
  return JSON.stringify(body.messages ?? body.input ?? body.contents ?? body);
}
