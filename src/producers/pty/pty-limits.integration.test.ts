/**
 * Resource limits on pty programs: the same limiter and shim as bash, so a memory hog in a terminal is
 * stopped with memory_limit, a fork bomb with pids_limit, and their groups are gone once they ended.
 */
import { existsSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { PtyTestbed } from '../../../test/fixtures/pty/harness.js';
import { ptyTestbed } from '../../../test/fixtures/pty/harness.js';
import { cgroupSkipReason } from '../../../test/support/cgroups.js';
import { ResourceLimiter } from '../../process/index.js';

const skip = cgroupSkipReason();

let testbed: PtyTestbed | undefined;
let limiter: ResourceLimiter | undefined;

afterEach(async () => {
  await testbed?.close();
  testbed = undefined;
  limiter?.dispose();
  limiter = undefined;
});

/** Directories below the limiter's own: its sessions' and programs' groups. */
function childGroups(directories: readonly string[]): string[] {
  return directories.flatMap((dir) =>
    existsSync(dir)
      ? readdirSync(dir, { withFileTypes: true })
          .filter((entry) => entry.isDirectory())
          .map((entry) => entry.name)
      : [],
  );
}

describe.skipIf(skip !== undefined)('pty programs under resource limits', () => {
  it('stops a memory hog with memory_limit, removing its group', async () => {
    limiter = new ResourceLimiter({ task: { memoryBytes: 64 * 1024 * 1024, pids: 32 } });
    testbed = ptyTestbed({ resourceLimits: limiter });
    const hog = await testbed.producer.start({
      command: `python3 -c 'a = []\nwhile True: a.append(bytearray(1 << 20))'`,
    });
    expect(hog.snapshot.detail).toMatchObject({ limits: { mechanism: limiter.mechanism } });
    const ended = await testbed.tasks.wait(hog.taskId, 20_000);
    expect(ended).toMatchObject({
      status: 'killed',
      detail: { reason: 'memory_limit', limitBreach: { reason: 'memory_limit', scope: 'task' } },
    });
    expect(ended.error).toContain('exceeding its memory limit of 64 MiB');
    expect(childGroups(limiter.directories)).toEqual([]);
  });

  it('stops a fork bomb with pids_limit and removes its group', async () => {
    limiter = new ResourceLimiter({ task: { memoryBytes: 64 * 1024 * 1024, pids: 32 } });
    testbed = ptyTestbed({ resourceLimits: limiter });
    // The program stays while its bomb grows: with a bare `bomb; wait` the shell exits at once (each
    // subshell returns as soon as it has put its pipeline in the background), and the sweep at the
    // program's exit stops the bomb before it reaches the limit, so that run ends `completed`.
    const bomb = await testbed.producer.start({ command: 'bomb() { bomb | bomb & }; bomb; sleep 30' });
    const stopped = await testbed.tasks.wait(bomb.taskId, 20_000);
    expect(stopped).toMatchObject({ status: 'killed', detail: { reason: 'pids_limit' } });
    expect(childGroups(limiter.directories)).toEqual([]);
  });
});
