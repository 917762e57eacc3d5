/**
 * Bash commands under bubblewrap, with real processes: workspace-write and read-only refuse writes
 * with the kernel's error, the private /tmp, the network switched off against a real listener, a tree
 * with a setsid escapee killed whole, /dev/stdout and /dev/stderr on real pipes, the output cap, and
 * the profile shown to the model and in details.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  capturingLogger,
  fixtureCommand,
  isAlive,
  pidsAfter,
  waitForOutput,
} from '../../../test/fixtures/bash/index.js';
import { findBubblewrap, waitForOuterPid } from '../../../test/support/bubblewrap.js';
import { realPipesAvailable } from '../../process/launch/stdio-pipes.js';
import { createTaskService } from '../../registry/index.js';
import { createOwner, type TaskService } from '../../tasks/index.js';
import { createTaskTools, executeTool, type ToolContext } from '../../tools/index.js';
import { BashProducer } from './bash-producer.js';
import { type BashToolOptions, createBashTool } from './bash-tool.js';
import { BashExecutor } from './executor.js';
import type { BashExecutorOptions } from './executor-options.js';

const bwrap = findBubblewrap();
/** Seen read-only inside every profile but `full` (unlike /tmp, which is replaced by a private one). */
const OUTSIDE = '/var/tmp';

let cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/**
 * A fresh directory. The working directories live under the host's /tmp (the sandbox mounts them into its
 * private /tmp); the places a command must not write to live under /var/tmp, which it sees read-only.
 */
function directory(prefix: string, parent = tmpdir()): string {
  const path = realpathSync(mkdtempSync(join(parent, prefix)));
  cleanups.push(() => rmSync(path, { recursive: true, force: true }));
  return path;
}

function executor(options: BashExecutorOptions = {}): BashExecutor {
  const created = new BashExecutor({ logger: capturingLogger(), killGraceMs: 500, ...options });
  cleanups.push(() => created.dispose());
  return created;
}

function tool(options: Omit<BashToolOptions, 'producer'>): {
  tasks: TaskService;
  bash: ReturnType<typeof createBashTool>;
} {
  const tasks = createTaskService({ logger: capturingLogger() });
  tasks.attachController('test');
  const producer = new BashProducer({ tasks, executor: executor() });
  cleanups.push(
    () => tasks.dispose(),
    () => producer.dispose(),
  );
  return { tasks, bash: createBashTool({ producer, autoBackgroundAfterMs: false, ...options }) };
}

function context(cwd: string, overrides: Partial<ToolContext> = {}): ToolContext {
  return { caller: undefined, toolCallId: 'call_1', signal: new AbortController().signal, cwd, ...overrides };
}

/** A listener on 127.0.0.1 outside any sandbox, counting the connections it accepts. */
async function listener(): Promise<{ port: number; accepted: () => number }> {
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted += 1;
    socket.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { port: address.port, accepted: () => accepted };
}

describe.skipIf(bwrap === undefined)('bash under bubblewrap', () => {
  it('workspace-write: a write outside the working directory fails with EROFS, one inside succeeds', async () => {
    const workspace = directory('errand-ws-');
    const outside = directory('errand-outside-', OUTSIDE);
    const { bash } = tool({ sandbox: 'workspace-write' });
    const inside = await executeTool(
      bash,
      { command: 'echo kept > inside.txt && mkdir -p deeper && echo also > deeper/file && cat inside.txt' },
      context(workspace),
    );
    expect(inside.text).toBe('kept\n[exit code: 0]');
    expect(readFileSync(join(workspace, 'inside.txt'), 'utf8')).toBe('kept\n');
    expect(readFileSync(join(workspace, 'deeper', 'file'), 'utf8')).toBe('also\n');

    const refused = await executeTool(
      bash,
      { command: `echo lost > ${JSON.stringify(join(outside, 'outside.txt'))}` },
      context(workspace),
    );
    expect(refused.text).toMatch(/\[stderr\] .*outside\.txt: Read-only file system\n\[exit code: 1\]$/);
    expect(existsSync(join(outside, 'outside.txt'))).toBe(false);
    // Home and the rest of the system are read-only too, and a `workdir` the model names is no way out.
    mkdirSync(join(outside, 'sub'));
    const viaWorkdir = await executeTool(
      bash,
      { command: 'touch here.txt', workdir: join(outside, 'sub') },
      context(workspace),
    );
    expect(viaWorkdir.text).toContain('Read-only file system');
    expect(existsSync(join(outside, 'sub', 'here.txt'))).toBe(false);
  });

  it('read-only refuses a write in the working directory; /tmp is private and empty', async () => {
    const workspace = directory('errand-ws-');
    const { bash } = tool({ sandbox: 'read-only' });
    const refused = await executeTool(bash, { command: 'touch cwd.txt' }, context(workspace));
    expect(refused.text).toContain("touch: cannot touch 'cwd.txt': Read-only file system");
    expect(existsSync(join(workspace, 'cwd.txt'))).toBe(false);
    const marker = `errand-private-${process.pid}`;
    const tmp = await executeTool(
      bash,
      { command: `ls -A /tmp | grep -c . ; echo "$TMPDIR"; echo x > /tmp/${marker} && cat /tmp/${marker}` },
      context(workspace),
    );
    // Only the working directory's mount point is there (it lives under the host's /tmp).
    expect(tmp.text).toBe('1\n/tmp\nx\n[exit code: 0]');
    expect(existsSync(join('/tmp', marker))).toBe(false);
  });

  it('with the network off a connection to a listener on 127.0.0.1 outside fails; with it on it connects', async () => {
    const workspace = directory('errand-ws-');
    const server = await listener();
    const connect = `exec 3<>/dev/tcp/127.0.0.1/${server.port} && echo connected`;
    const offline = tool({ sandbox: { profile: 'workspace-write', network: false } }).bash;
    const refused = await executeTool(offline, { command: connect }, context(workspace));
    expect(refused.text).toContain('Connection refused');
    expect(refused.text).toMatch(/\[exit code: 1\]$/);
    expect(server.accepted()).toBe(0);
    const online = tool({ sandbox: 'workspace-write' }).bash;
    const connected = await executeTool(online, { command: connect }, context(workspace));
    expect(connected.text).toBe('connected\n[exit code: 0]');
    expect(server.accepted()).toBe(1);
    // `full` with the network off confines only the network.
    const fullOffline = tool({ sandbox: { profile: 'full', network: false } }).bash;
    const outsideFile = join(directory('errand-outside-', OUTSIDE), 'written');
    const full = await executeTool(
      fullOffline,
      { command: `echo ok > ${JSON.stringify(outsideFile)}; ${connect}` },
      context(workspace),
    );
    expect(full.text).toContain('Connection refused');
    expect(readFileSync(outsideFile, 'utf8')).toBe('ok\n');
    expect(server.accepted()).toBe(1);
  });

  it('kills a tree started inside, setsid escapee included, and every process is gone', async () => {
    const run = executor({ sandbox: 'workspace-write' });
    const handle = run.start({ command: `${fixtureCommand('setsid-escape')} & sleep 1000 & wait` });
    const text = await waitForOutput(handle, 'ready');
    // The command prints the pid its own namespace gives the escapee; this process knows it by another.
    const escapee = await waitForOuterPid(pidsAfter(text, 'escapee')[0]!);
    expect(escapee).toBeDefined();
    expect(isAlive(escapee!)).toBe(true);
    // The escapee left the group and the session: only its parent chain or its tag can find it.
    const stat = readFileSync(`/proc/${escapee}/stat`, 'latin1');
    const [, , , , group, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    expect(Number(session)).not.toBe(handle.pid);
    expect(Number(group)).not.toBe(handle.pid);
    handle.cancel('test');
    const facts = await handle.stopped;
    expect(facts.reason).toBe('cancelled');
    expect(isAlive(escapee!)).toBe(false);
    expect(facts.survivors).toEqual([]);
    // bwrap, its pid namespace's init, the shell, the fixture, its sleep, the escapee and the other sleep.
    expect(facts.signalledProcesses).toBeGreaterThanOrEqual(5);
  });

  // Real pipes need the native pipes helper; on the fallback path (socket pairs) opening them fails.
  it.skipIf(!realPipesAvailable())(
    'a confined command writes to /dev/stdout and /dev/stderr (its real pipes reach inside)',
    async () => {
      const { bash } = tool({ sandbox: 'read-only' });
      const result = await executeTool(
        bash,
        {
          command: 'echo to-stdout > /dev/stdout; echo to-stderr > /dev/stderr; echo piped | tee /dev/stdout',
        },
        context(directory('errand-ws-')),
      );
      expect(result.text).toContain('to-stdout\n');
      expect(result.text).toContain('[stderr] to-stderr');
      expect(result.text).toContain('piped\npiped\n');
      expect(result.text).not.toContain('No such device or address');
      expect(result.text).toMatch(/\[exit code: 0\]$/);
    },
  );

  it('a confined command sees and signals only its own processes (a pid namespace of its own)', async () => {
    const { bash } = tool({ sandbox: 'read-only' });
    const result = await executeTool(
      bash,
      {
        command: `kill -0 ${process.pid} 2>&1; echo "kill: $?"; ls /proc | grep -c '^[0-9]' ; echo "self: $$"`,
      },
      context(directory('errand-ws-')),
    );
    // Its init, the shell, and the ls and grep of the pipe.
    expect(result.text).toMatch(
      new RegExp(`kill: \\(${process.pid}\\) - No such process\nkill: 1\n[1-5]\nself: 2\n`),
    );
    expect(isAlive(process.pid)).toBe(true);
  });

  it('a double-forked escapee inside, with no ppid link, is found by its tag and killed', async () => {
    const run = executor({ sandbox: 'read-only' });
    const handle = run.start({ command: fixtureCommand('setsid-escape', 'detach') });
    const escapee = await waitForOuterPid(pidsAfter(await waitForOutput(handle, 'ready'), 'escapee')[0]!);
    expect(escapee).toBeDefined();
    handle.cancel();
    await handle.stopped;
    expect(isAlive(escapee!)).toBe(false);
  });

  it('confines a durable command; its wrapper, outside the sandbox, still writes the output and exit status', async () => {
    const workspace = directory('errand-ws-');
    const outside = directory('errand-outside-', OUTSIDE);
    const handle = executor().start({
      command: `echo kept > inside.txt; echo lost > ${JSON.stringify(join(outside, 'o.txt'))}; echo done; exit 3`,
      cwd: workspace,
      durable: true,
      sandbox: 'workspace-write',
    });
    const facts = await handle.stopped;
    expect(facts).toMatchObject({ reason: 'completed', exitCode: 3 });
    expect(readFileSync(join(workspace, 'inside.txt'), 'utf8')).toBe('kept\n');
    expect(existsSync(join(outside, 'o.txt'))).toBe(false);
    const output = readFileSync(facts.outputFile!, 'utf8');
    expect(output).toContain('Read-only file system');
    expect(output.endsWith('done\n')).toBe(true);
    expect(readFileSync(handle.statusFile!, 'utf8')).toBe('{"exitCode":3}\n');
  });

  it('enforces the output cap inside the sandbox', async () => {
    const run = executor({ sandbox: 'read-only', maxOutputFileBytes: 64 * 1024 });
    const facts = await run.start({ command: 'yes errand' }).stopped;
    expect(facts.reason).toBe('output_limit');
    expect(facts.outputBytes).toBe(64 * 1024);
  });

  it('tells the model in the description, and shows the profile in the detail and the task list', async () => {
    const workspace = directory('errand-ws-');
    const { tasks, bash } = tool({ sandbox: { profile: 'workspace-write', network: false } });
    expect(bash.description).toContain(
      "Commands run in a sandbox (profile workspace-write, network off): it may write only under the session's working directory",
    );
    expect(tool({}).bash.description).not.toContain('sandbox');
    const owner = createOwner('s1');
    tasks.attachController('owner', { owner });
    const started = await executeTool(
      bash,
      { command: 'sleep 30', run_in_background: true },
      context(workspace, { caller: owner }),
    );
    const taskId = /Started (bash-\d+)/.exec(started.text)![1]!;
    expect(tasks.get(taskId, owner).detail.sandbox).toEqual({ profile: 'workspace-write', network: false });
    const taskTools = createTaskTools({ tasks });
    cleanups.push(() => taskTools.dispose());
    const list = taskTools.tools.find((definition) => definition.name === 'task_list')!;
    const listed = await executeTool(list, {}, context(workspace, { caller: owner }));
    expect(listed.text).toBe(`${taskId} [bash] running — sleep 30 (sandbox: workspace-write, network off)`);
    await tasks.kill(taskId, owner);
  });

  it('refuses a durable directory inside the writable workspace, before anything runs (TMPDIR=$W/tmp)', async () => {
    const workspace = directory('errand-ws-');
    const temporary = join(workspace, 'tmp');
    mkdirSync(temporary);
    const victim = join(directory('errand-victim-', OUTSIDE), 'victim.txt');
    writeFileSync(victim, 'untouched\n');
    const run = executor({ sandbox: 'workspace-write', outputDirectoryParent: temporary });
    // The attack: link the wrapper's temporary status file to the victim, then end.
    const attack = `for f in ${temporary}/errand-durable-*/*.log; do ln -sf ${victim} "\${f%.log}.status.tmp"; done`;
    expect(() => run.start({ command: attack, cwd: workspace, durable: true })).toThrow(
      expect.objectContaining({
        code: 'DURABLE_DIRECTORY_IN_WORKSPACE',
        message: expect.stringContaining(
          `inside the sandbox's writable workspace ${JSON.stringify(workspace)}`,
        ),
      }),
    );
    // A workspace reached through a link is the same workspace.
    const linked = join(directory('errand-link-'), 'ws');
    symlinkSync(workspace, linked);
    expect(() => run.start({ command: 'true', cwd: linked, durable: true })).toThrow(
      expect.objectContaining({ code: 'DURABLE_DIRECTORY_IN_WORKSPACE' }),
    );
    // Not durable, or the directory elsewhere: it runs, confined, and the victim is never written.
    expect((await run.start({ command: 'true', cwd: workspace }).stopped).exitCode).toBe(0);
    const elsewhere = executor({
      sandbox: 'workspace-write',
      outputDirectoryParent: directory('errand-out-'),
    });
    // Its directory is out of the command's sight: the loop finds nothing to link.
    const facts = await elsewhere.start({ command: attack, cwd: workspace, durable: true }).stopped;
    expect(facts.reason).toBe('completed');
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
  });
});
