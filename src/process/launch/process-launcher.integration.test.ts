/** The default launcher against real processes: its own session and group, the tag, stdin on /dev/null. */
import { describe, expect, it } from 'vitest';
import { pipeLinks } from '../../../test/fixtures/process/launches.js';
import {
  createSpawnLauncher,
  type LaunchedProcess,
  launchEnvironment,
  type Spawner,
} from './process-launcher.js';
import { realPipesAvailable } from './stdio-pipes.js';

/** Everything the process wrote to stdout, once the pipe closed. */
function outputOf(child: LaunchedProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.on('error', reject);
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    child.stderr?.resume();
    child.stdout!.once('close', () => resolve(text));
  });
}

describe('createSpawnLauncher', () => {
  it('starts a process as the leader of its own session and group, tagged, with stdin on /dev/null', async () => {
    const child = createSpawnLauncher().launch({
      file: 'bash',
      args: ['-c', 'cut -d" " -f1,5,6 /proc/$$/stat; echo "$ERRAND_TEST_TAG"; readlink /proc/$$/fd/0'],
      cwd: process.cwd(),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      tag: { name: 'ERRAND_TEST_TAG', value: 'tree-1' },
    });
    const [ids, tag, stdin] = (await outputOf(child)).trim().split('\n');
    const [pid, group, session] = ids!.split(' ').map(Number);
    expect(pid).toBe(child.pid);
    expect(group).toBe(pid);
    expect(session).toBe(pid);
    expect(tag).toBe('tree-1');
    expect(stdin).toBe('/dev/null');
  });

  it('spawns through the given spawner, and adds the tag to a copy of the environment', () => {
    const env = { PATH: '/usr/bin' };
    const calls: Parameters<Spawner>[] = [];
    const spawner: Spawner = (...call) => {
      calls.push(call);
      throw new Error('counted');
    };
    const request = { file: 'bash', args: ['-c', 'true'], cwd: '/', env, tag: { name: 'T', value: 'v' } };
    // Pipes only: other descriptors of this worker (a finished test's sockets) close on their own time.
    const before = pipeLinks();
    expect(() => createSpawnLauncher(spawner).launch(request)).toThrow('counted');
    expect(calls).toHaveLength(1);
    const [file, args, options] = calls[0]!;
    expect([file, args]).toEqual(['bash', ['-c', 'true']]);
    expect(options).toMatchObject({ cwd: '/', env: { PATH: '/usr/bin', T: 'v' }, detached: true });
    const stdio = options.stdio as unknown[];
    if (realPipesAvailable()) {
      // The write ends of two real pipes; the spawn threw, so all four ends are closed again.
      expect(stdio).toHaveLength(3);
      expect(stdio[0]).toBe('ignore');
      expect(stdio.slice(1).every((fd) => typeof fd === 'number')).toBe(true);
      expect(pipeLinks().filter((link) => !before.includes(link))).toEqual([]);
    } else {
      expect(stdio).toEqual(['ignore', 'pipe', 'pipe']);
    }
    expect(env).toEqual({ PATH: '/usr/bin' });
    expect(launchEnvironment({ ...request, tag: undefined })).toBe(env);
    // An environment that carries the tag already is given as it is, not copied again.
    const tagged = { PATH: '/usr/bin', T: 'v' };
    expect(launchEnvironment({ ...request, env: tagged })).toBe(tagged);
    expect(launchEnvironment({ ...request, env: { ...tagged, T: 'other' } })).toEqual(tagged);
  });
});
