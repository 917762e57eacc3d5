/**
 * `errand demo`: a short, real scenario of the task service. Two sessions start real shell commands as
 * tasks, stream and read their output, kill one, wait for another, and dispose an owner.
 */
import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { createTaskService } from '../registry/index.js';
import { createOwner, type TaskHooks, type TaskOutcome, type TaskSpec } from '../tasks/index.js';

/** A minimal streaming producer for the demo: one shell command in its own process group. */
function shellTask(command: string, owner: TaskSpec['owner']): TaskSpec {
  return {
    kind: 'bash',
    label: command,
    ...(owner ? { owner } : {}),
    run(): TaskHooks {
      const child = spawn('bash', ['-c', command], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      let pending = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        pending += chunk;
      });
      child.stderr.resume();
      const done = new Promise<TaskOutcome>((resolve) => {
        child.on('exit', (code, signal) => {
          resolve({
            status: code === 0 ? 'completed' : signal ? 'killed' : 'failed',
            detail: { exitCode: code, signal },
          });
        });
      });
      return {
        done,
        cancel() {
          if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
        },
        readOutput() {
          const text = pending;
          pending = '';
          return text;
        },
      };
    },
  };
}

export async function runDemo(out: Writable): Promise<number> {
  const say = (line: string) => out.write(`${line}\n`);
  const tasks = createTaskService();
  const detach = tasks.attachController('demo');
  const alice = createOwner('alice');
  const bob = createOwner('bob');

  say('errand demo: the task service with two sessions, real shell commands\n');
  const ticker = await tasks.start(
    shellTask('for i in 1 2 3 4 5 6 7 8 9 10; do echo "tick $i"; sleep 0.2; done', alice),
  );
  const build = await tasks.start(shellTask('echo compiling; sleep 0.5; echo "built 3 modules"', alice));
  const server = await tasks.start(shellTask('echo "listening on :8080"; sleep 60', bob));
  say(`alice started ${ticker.id} (${ticker.label})`);
  say(`alice started ${build.id} (${build.label})`);
  say(`bob started   ${server.id} (${server.label})`);
  say(
    `alice sees: ${tasks
      .list(alice)
      .map((task) => task.id)
      .join(', ')}`,
  );
  say(
    `bob sees:   ${tasks
      .list(bob)
      .map((task) => task.id)
      .join(', ')}`,
  );
  try {
    tasks.get(ticker.id, bob);
  } catch (error) {
    say(
      `bob reading alice's ${ticker.id}: ${(error as { code: string }).code} (looks exactly like an unknown id)`,
    );
  }

  await tasks.wait(ticker.id, 450, alice).catch(() => undefined);
  const first = await tasks.read(ticker.id, alice);
  say(`\nalice reads ${ticker.id} while it runs:\n${indent(first.text)}[status: ${first.snapshot.status}]`);

  const built = await tasks.wait(build.id, 10_000, alice);
  const buildOutput = await tasks.read(build.id, alice);
  say(`\nalice waits for ${build.id}: ${built.status} (exit code ${String(built.detail.exitCode)})`);
  say(indent(buildOutput.text).trimEnd());

  const killed = await tasks.kill(ticker.id, alice, 'no longer needed', { initiator: 'model' });
  say(`\nalice kills ${ticker.id}: ${killed.status}`);
  const ended = await tasks.wait(ticker.id, 10_000, alice);
  say(`${ticker.id} ended: ${ended.status} (signal ${String(ended.detail.signal)})`);

  say(`\nbob's session closes while ${server.id} still runs; disposing the owner stops its work`);
  await bob.dispose();
  say(`bob's tasks after disposal: ${tasks.list(bob).length}`);

  await alice.dispose();
  detach();
  await tasks.dispose();
  say('\ndone: every task settled exactly once, nothing left running');
  return 0;
}

function indent(text: string): string {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => `  | ${line}\n`)
    .join('');
}
