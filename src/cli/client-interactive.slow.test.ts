/**
 * The real Codex CLI and Gemini CLI interactive — their terminal UIs in a pseudo-terminal, nobody typing
 * unless the case says so — against a scripted model on 127.0.0.1, with `errand install <client>` into a
 * temporary HOME. What a person sees of a background job's ending, measured as the seconds from the
 * job's end to the model request that carries its `<task-notification>`:
 *
 * - the job ends while the model works (it calls the client's own shell): on the next tool's result;
 * - it ends after the turn, within `--stop-wait-ms`: the end of the turn waits for it and continues;
 * - it runs longer than `--stop-wait-ms`: one reminder at the end of the wait, then the turn ends, and
 *   the ending waits for the person's next prompt (neither client can wake an idle session).
 *
 * Each case prints its figures on stderr; docs/hooks.md has them in its table.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClientBox,
  clientArgs,
  clientBox,
  clientEnvironment,
  clientShell,
  findErrandBash,
  findRealClient,
  installClient,
  notificationCount,
  pollUntil,
  type RealClient,
} from '../../test/support/real-clients.js';
import {
  type ModelReply,
  type ModelRequest,
  type ScriptedModelServer,
  startScriptedModelServer,
} from '../../test/support/scripted-model-server.js';
import { spawnInTerminal, type TerminalProgram } from '../../test/support/terminal.js';
import { openSqliteSessionStore } from '../store/index.js';

const executables: Record<RealClient, string | undefined> = {
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
  for (const server of servers.splice(0)) await server.close();
  for (const box of boxes.splice(0)) rmSync(box.root, { recursive: true, force: true });
});

/** At most this many pauses while the client's MCP server starts. */
const MAX_PAUSES = 120;

interface Seen {
  readonly at: number;
  readonly raw: string;
}

const until = pollUntil;

/** The ledger's view: notifications delivered and still queued. */
function ledgerOf(errandHome: string): { delivered: string[]; undelivered: number } {
  const store = openSqliteSessionStore({ home: errandHome });
  try {
    const delivered: string[] = [];
    let undelivered = 0;
    for (const session of store.listSessions()) {
      for (const entry of store.listLedger(session.id)) {
        if (entry.kind !== 'notification') continue;
        if (entry.state === 'delivered') delivered.push(entry.taskId ?? '');
        else undelivered += 1;
      }
    }
    return { delivered, undelivered };
  } finally {
    store.close();
  }
}

/**
 * The ledger records the one delivery once the client showed the model continued with it (an end-of-turn
 * block is settled by the client's next hook, which may run a moment after the answer shows).
 */
async function toldOnceInLedger(box: ClientBox): Promise<void> {
  const wanted = JSON.stringify({ delivered: ['bash-1'], undelivered: 0 });
  await until(
    () => JSON.stringify(ledgerOf(box.errandHome)) === wanted,
    'the delivery recorded',
    30_000,
  ).catch(() => undefined);
  expect(ledgerOf(box.errandHome)).toEqual({ delivered: ['bash-1'], undelivered: 0 });
}

interface Case {
  readonly box: ClientBox;
  readonly model: ScriptedModelServer;
  readonly terminal: TerminalProgram;
  /** Epoch ms the job wrote when it ended (read once it exists). */
  readonly endedAt: () => number;
  /** Requests that carried the job's notification, in order. */
  readonly carried: Seen[];
}

/**
 * Starts `client` interactive with `prompt`; the model starts `command` in the background (once the
 * client offers Errand's bash), then `afterStart` decides each request that does not carry the ending,
 * and `onEnding` the first one that does.
 */
async function startCase(
  client: RealClient,
  options: {
    readonly installFlags?: readonly string[];
    readonly command: (endedFile: string, box: ClientBox) => string;
    readonly afterStart: (request: ModelRequest, box: ClientBox) => ModelReply;
    readonly onEnding: (request: ModelRequest) => ModelReply;
  },
): Promise<Case> {
  const box = clientBox('errand-ci-');
  boxes.push(box);
  const ended = join(box.work, 'ended-at');
  const carried: Seen[] = [];
  let started = false;
  let pauses = 0;
  const model = await startScriptedModelServer((request) => {
    if (!started) {
      const name = findErrandBash(request.tools);
      if (name === undefined) {
        pauses += 1;
        if (pauses > MAX_PAUSES) throw new Error(`no errand bash among ${request.tools.join(', ')}`);
        return clientShell(client, 0.25);
      }
      started = true;
      return {
        kind: 'tool',
        name,
        args: { command: options.command(ended, box), description: 'the build', run_in_background: true },
      };
    }
    if (notificationCount(request.raw, 'bash-1') > 0) {
      carried.push({ at: Date.now(), raw: request.raw });
      if (carried.length === 1) return options.onEnding(request);
      return { kind: 'text', text: 'Nothing new.' };
    }
    return options.afterStart(request, box);
  });
  servers.push(model);
  await installClient(client, box, model.origin, options.installFlags ?? []);
  const terminal = await spawnInTerminal(
    executables[client] as string,
    clientArgs(client, 'interactive', 'Build the project.'),
    {
      cwd: box.work,
      env: clientEnvironment(client, box, model.origin) as Record<string, string>,
      cols: 120,
      rows: 40,
    },
  );
  terminals.push(terminal);
  return {
    box,
    model,
    terminal,
    endedAt: () => Number(readFileSync(ended, 'utf8').trim()),
    carried,
  };
}

/** Whether the job wrote its end time yet. */
function hasEnded(box: ClientBox): boolean {
  try {
    return readFileSync(join(box.work, 'ended-at'), 'utf8').trim() !== '';
  } catch {
    return false;
  }
}

const seconds = (ms: number) => (ms / 1000).toFixed(2);

for (const client of ['codex', 'gemini'] as const) {
  describe.skipIf(executables[client] === undefined)(
    `${client} interactive, errand install ${client}`,
    () => {
      it('a job that ends while the model works: told on the next tool result', async () => {
        const test = await startCase(client, {
          command: (ended, box) =>
            `while [ ! -e ${join(box.root, 'go')} ]; do sleep 0.05; done; date +%s%3N > ${ended}; echo built; exit 5`,
          afterStart: (request, box) => {
            // The model works on (the client's own shell, a second at a time); the job ends meanwhile.
            writeFileOnce(join(box.root, 'go'));
            if (request.turn > 60) return { kind: 'text', text: 'Gave up waiting.' };
            return clientShell(client, 1);
          },
          onEnding: () => ({ kind: 'text', text: 'The build exited with 5.' }),
        });
        await until(() => test.carried.length > 0, 'a request carrying the ending', 120_000);
        const latency = (test.carried[0]?.at ?? 0) - test.endedAt();
        expect(test.carried[0]?.raw).toMatch(/exit code 5/);
        await test.terminal.waitFor((screen) => screen.includes('exited with 5'), 'the answer', 60_000);
        expect(test.carried.every((seen) => notificationCount(seen.raw, 'bash-1') === 1)).toBe(true);
        await toldOnceInLedger(test.box);
        process.stderr.write(
          `${client} interactive, job ends while the model works: told ${seconds(latency)} s after its end, on the next tool result (${test.carried.length} request(s) carried it, once each)\n`,
        );
      }, 240_000);

      it('a job that ends after the turn, within --stop-wait-ms, nobody typing: the end of the turn waits and continues with it', async () => {
        const test = await startCase(client, {
          installFlags: ['--stop-wait-ms', '60000'],
          command: (ended) => `sleep 8; date +%s%3N > ${ended}; echo built; exit 3`,
          afterStart: () => ({ kind: 'text', text: 'The build runs in the background.' }),
          onEnding: () => ({ kind: 'text', text: 'The build exited with 3.' }),
        });
        await test.terminal.waitFor(
          (screen) => screen.includes('runs in the background'),
          'the final answer',
          120_000,
        );
        // Held: the turn has not ended while the job runs. What the person sees meanwhile:
        const held = test.terminal.screen();
        await until(() => test.carried.length > 0, 'a request carrying the ending', 90_000);
        const latency = (test.carried[0]?.at ?? 0) - test.endedAt();
        expect(test.carried[0]?.raw).toMatch(/exit code 3/);
        await test.terminal.waitFor((screen) => screen.includes('exited with 3'), 'the answer', 60_000);
        expect(test.carried.every((seen) => notificationCount(seen.raw, 'bash-1') === 1)).toBe(true);
        await toldOnceInLedger(test.box);
        process.stderr.write(
          `${client} interactive, job ends 8 s after the turn (stop wait 60 s): told ${seconds(latency)} s after its end, at Stop; held screen's last rows: ${JSON.stringify(held.split('\n').slice(-14))}\n`,
        );
      }, 240_000);

      it('a job longer than --stop-wait-ms, nobody typing: reminded once, then told with the next prompt', async () => {
        let remindedAt: number | undefined;
        const test = await startCase(client, {
          installFlags: ['--stop-wait-ms', '3000'],
          command: (ended) => `sleep 20; date +%s%3N > ${ended}; echo built; exit 4`,
          afterStart: (request) => {
            if (request.raw.includes('Background work you started is still running: bash-1')) {
              remindedAt ??= Date.now();
              return { kind: 'text', text: 'Noted: the build is still running.' };
            }
            return /Anything new/.test(request.raw)
              ? { kind: 'text', text: 'No news.' }
              : { kind: 'text', text: 'The build runs in the background.' };
          },
          onEnding: () => ({ kind: 'text', text: 'The build exited with 4.' }),
        });
        await until(() => hasEnded(test.box), 'the job to end', 120_000);
        const endedAt = test.endedAt();
        // Nobody types: nothing reaches the model for 10 s after the job's end.
        await new Promise((resolvePromise) => setTimeout(resolvePromise, 10_000));
        const beforePrompt = test.carried.length;
        const typedAt = Date.now();
        test.terminal.write('Anything new?');
        await new Promise((resolvePromise) => setTimeout(resolvePromise, 500));
        test.terminal.write('\r');
        await until(() => test.carried.length > 0, 'a request carrying the ending', 60_000);
        expect(beforePrompt).toBe(0);
        expect(remindedAt).toBeDefined();
        expect(test.carried[0]?.raw).toMatch(/exit code 4/);
        await test.terminal.waitFor((screen) => screen.includes('exited with 4'), 'the answer', 60_000);
        await toldOnceInLedger(test.box);
        process.stderr.write(
          `${client} interactive, 20 s job, stop wait 3 s: reminded once; nothing for ${seconds(typedAt - endedAt)} s after its end with nobody typing; told ${seconds((test.carried[0]?.at ?? 0) - typedAt)} s after the next prompt was typed\n`,
        );
      }, 240_000);
    },
  );
}

/** Creates `path` (empty) unless it exists: the job's loop sees it and ends. */
function writeFileOnce(path: string): void {
  if (!existsSync(path)) writeFileSync(path, '');
}
