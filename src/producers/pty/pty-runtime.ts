/**
 * Loads the two libraries a pseudo-terminal needs, lazily: node-pty (an optional native dependency) spawns
 * the program, @xterm/headless renders its output to text. Nothing is loaded until a pty task starts, so
 * hosts without node-pty pay nothing and get a clear `PTY_UNAVAILABLE` error instead of a crash at import.
 */
import { PtyUnavailableError } from './errors.js';

/** The part of node-pty's `IPty` the producer uses (declared here so node-pty's types stay optional). */
export interface PtyChild {
  readonly pid: number;
  /** The terminal's slave device, e.g. `/dev/pts/3` (node-pty on Unix). */
  readonly ptsName?: string;
  onData(listener: (data: Uint8Array | string) => void): { dispose(): void };
  onExit(listener: (event: { exitCode: number; signal?: number }) => void): { dispose(): void };
  write(data: string): void;
  resize(cols: number, rows: number): void;
  pause(): void;
  resume(): void;
}

export interface PtySpawnOptions {
  readonly name: string;
  readonly cols: number;
  readonly rows: number;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  /** `null`: raw bytes, so the output file receives exactly what the program wrote. */
  readonly encoding: null;
}

/** Spawns `file` with `args` in a new pseudo-terminal; the child becomes a session leader. */
export type PtySpawn = (file: string, args: string[], options: PtySpawnOptions) => PtyChild;

/** The part of @xterm/headless's `Terminal` the renderer uses. */
export interface HeadlessTerminalConstructor {
  new (options: {
    cols: number;
    rows: number;
    scrollback: number;
    allowProposedApi: boolean;
    logLevel?: 'off';
  }): import('@xterm/headless').Terminal;
}

export interface PtyRuntime {
  readonly spawn: PtySpawn;
  readonly Terminal: HeadlessTerminalConstructor;
}

/** Loads node-pty's module namespace; injectable so tests can simulate a missing dependency. */
export type PtyModuleLoader = () => Promise<unknown>;

// A variable specifier keeps the type checker from requiring node-pty's types: it is optional.
const NODE_PTY_SPECIFIER = 'node-pty';

export const loadNodePtyModule: PtyModuleLoader = () => import(NODE_PTY_SPECIFIER);

let defaultRuntime: Promise<PtyRuntime> | undefined;

/**
 * Resolves the pty runtime or rejects with `PtyUnavailableError`. The default loader's result is cached
 * (an optional dependency does not appear while the process runs); an injected loader is called each time.
 */
export function loadPtyRuntime(loader?: PtyModuleLoader): Promise<PtyRuntime> {
  if (loader !== undefined) return resolveRuntime(loader);
  defaultRuntime ??= resolveRuntime(loadNodePtyModule);
  return defaultRuntime;
}

/** True when pseudo-terminal tasks can start here; surfaces use it to omit the pty tools. */
export async function isPtyAvailable(loader?: PtyModuleLoader): Promise<boolean> {
  try {
    await loadPtyRuntime(loader);
    return true;
  } catch {
    return false;
  }
}

async function resolveRuntime(loader: PtyModuleLoader): Promise<PtyRuntime> {
  let spawn: PtySpawn;
  try {
    spawn = spawnOf(await loader());
  } catch (error) {
    throw new PtyUnavailableError(error);
  }
  const xterm = (await import('@xterm/headless')).default as { Terminal: HeadlessTerminalConstructor };
  return { spawn, Terminal: xterm.Terminal };
}

function spawnOf(namespace: unknown): PtySpawn {
  const candidates = [namespace, (namespace as { default?: unknown } | null | undefined)?.default];
  for (const candidate of candidates) {
    const spawn = (candidate as { spawn?: unknown } | null | undefined)?.spawn;
    if (typeof spawn === 'function') return spawn as PtySpawn;
  }
  throw new Error('the loaded module has no spawn function');
}
