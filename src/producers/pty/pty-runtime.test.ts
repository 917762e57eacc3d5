import { describe, expect, it } from 'vitest';
import { ErrandError } from '../../tasks/index.js';
import { isPtyAvailable, loadPtyRuntime } from './pty-runtime.js';

const missing = async () => {
  throw new Error("Cannot find package 'node-pty' imported from /app/dist/producers/pty/pty-runtime.js");
};

describe('loading node-pty', () => {
  it('turns a missing node-pty into PTY_UNAVAILABLE with the install command', async () => {
    const error = await loadPtyRuntime(missing).catch((caught: unknown) => caught);
    expect(ErrandError.hasCode(error, 'PTY_UNAVAILABLE')).toBe(true);
    expect(error).toMatchObject({ fault: 'system', context: { dependency: 'node-pty' } });
    expect((error as Error).message).toBe(
      "Pseudo-terminal tasks need the optional dependency node-pty, which could not be loaded (Cannot find package 'node-pty' imported from /app/dist/producers/pty/pty-runtime.js). " +
        'Install it with `npm install node-pty@1.1.0` (it compiles a native addon: python3, make and a C++ compiler are needed), or leave the pty tools out.',
    );
    expect((error as Error).cause).toBeInstanceOf(Error);
  });

  it('rejects a module that has no spawn function (a broken native build)', async () => {
    await expect(loadPtyRuntime(async () => ({ default: {} }))).rejects.toMatchObject({
      code: 'PTY_UNAVAILABLE',
      message: expect.stringContaining('the loaded module has no spawn function'),
    });
  });

  it('reports availability without throwing', async () => {
    expect(await isPtyAvailable(missing)).toBe(false);
    expect(await isPtyAvailable()).toBe(true);
  });

  it('loads the real runtime: node-pty and the headless terminal', async () => {
    const runtime = await loadPtyRuntime();
    expect(typeof runtime.spawn).toBe('function');
    expect(typeof runtime.Terminal).toBe('function');
  });
});
