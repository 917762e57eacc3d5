import { describe, expect, it } from 'vitest';
import { flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import { createOwner } from '../tasks/index.js';
import { scriptedTask } from '../testing/index.js';
import { releaseAttemptClaim } from './release-attempt-claim.js';

describe('releaseAttemptClaim (the same-attempt claim rule)', () => {
  it('returns the claim of the attempt it was taken for, so a later reader can still collect the end', async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const task = scriptedTask({ kind: 'bash', label: 'build', owner });
    const { id } = await tasks.start(task.spec);
    task.settle();
    await flushMicrotasks();
    expect(tasks.claim(id, owner)).toBe(true);
    expect(releaseAttemptClaim(tasks, id, 1, owner)).toBe('released');
    expect(tasks.get(id, owner).reported).toBe(false);
    // Returning a claim nobody holds changes nothing.
    expect(releaseAttemptClaim(tasks, id, 1, owner)).toBe('released');
    expect(tasks.claim(id, owner)).toBe(true);
    await tasks.dispose();
  });

  it("leaves a resumed task's claim alone: it belongs to whoever received that attempt's end", async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    const first = scriptedTask({ kind: 'bash', label: 'build', owner });
    const { id } = await tasks.start(first.spec);
    first.settle();
    await flushMicrotasks();
    expect(tasks.claim(id, owner)).toBe(true);
    const second = scriptedTask({ kind: 'bash', label: 'build', owner, spec: { resumeId: id } });
    await tasks.start(second.spec);
    const waited = tasks.wait(id, 60_000, owner);
    second.settle();
    expect(await waited).toMatchObject({ attempt: 2, reported: true });
    expect(releaseAttemptClaim(tasks, id, 1, owner)).toBe('other_attempt');
    expect(tasks.get(id, owner)).toMatchObject({ attempt: 2, reported: true });
    await tasks.dispose();
  });

  it("answers not_found for a task the registry forgot or that is not the caller's, and throws anything else", async () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s1');
    expect(releaseAttemptClaim(tasks, 'bash-9', 1, owner)).toBe('not_found');
    const task = scriptedTask({ kind: 'bash', label: 'build', owner });
    const { id } = await tasks.start(task.spec);
    expect(releaseAttemptClaim(tasks, id, 1, createOwner('s2'))).toBe('not_found');
    const broken = {
      get: () => {
        throw new Error('registry unavailable');
      },
      releaseClaim: () => {},
    };
    expect(() => releaseAttemptClaim(broken, id, 1, owner)).toThrow('registry unavailable');
    task.settle();
    await tasks.dispose();
  });
});
