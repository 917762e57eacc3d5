/**
 * Where an MCP server tells hooks it exists: one record per `errand mcp` process in the data directory's
 * `run/` folder (0700), `mcp-<pid>.json` (0600, written whole by a rename), naming the server's process,
 * its client process (its parent, past any launcher such as `npx`), its session and its Unix socket. A hook lists the records, keeps the
 * live ones (pid and process start time both match, so a reused pid does not count), and matches a client
 * among its own ancestors. A record left by a server that was killed is removed by whoever finds it dead.
 */
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// The table module alone: a hook runs on every tool call and loads no more than it needs.
import { type ProcessEntry, type ProcessSource, procfsSource } from '../process/trees/process-table.js';
import { ensurePrivateDirectory } from '../store/data-directory.js';

export const SERVER_RECORD_SCHEMA_VERSION = 1;
export const RUN_DIRECTORY_NAME = 'run';
export const RECORD_FILE_MODE = 0o600;

/** The longest socket path used inside the data directory (Linux allows 107 bytes; some systems 103). */
export const MAX_SOCKET_PATH_BYTES = 100;

/** A process as a record names it: a pid is only the same process while its start time matches. */
export interface ProcessIdentity {
  readonly pid: number;
  /** Clock ticks after boot (field 22 of /proc/<pid>/stat). */
  readonly startTime: number;
}

export interface ServerRecord {
  readonly schemaVersion: number;
  /** The `errand mcp` process. */
  readonly server: ProcessIdentity;
  /** Its parent when it started: the MCP client that launched it. */
  readonly client: ProcessIdentity;
  readonly sessionId: string;
  /** The Unix socket hooks connect to. */
  readonly socket: string;
  /** Epoch milliseconds. */
  readonly startedAt: number;
}

export function runDirectoryOf(home: string): string {
  return join(home, RUN_DIRECTORY_NAME);
}

function recordPath(home: string, pid: number): string {
  return join(runDirectoryOf(home), `mcp-${pid}.json`);
}

/**
 * Where the server's socket goes: `run/mcp-<pid>.sock` in the data directory, or — when that path is too
 * long for a socket address — a private (0700) directory of its own under the system's temporary
 * directory. `cleanup` removes what was created for it.
 */
export function chooseSocketPath(home: string, pid: number): { path: string; cleanup: () => void } {
  ensurePrivateDirectory(runDirectoryOf(home));
  const inHome = join(runDirectoryOf(home), `mcp-${pid}.sock`);
  if (Buffer.byteLength(inHome) <= MAX_SOCKET_PATH_BYTES) {
    return { path: inHome, cleanup: () => rmSync(inHome, { force: true }) };
  }
  const directory = mkdtempSync(join(tmpdir(), 'errand-'));
  return {
    path: join(directory, 'mcp.sock'),
    cleanup: () => rmSync(directory, { recursive: true, force: true }),
  };
}

/** Writes the record (0600, atomically) and returns the function that removes it. */
export function writeServerRecord(home: string, record: ServerRecord): () => void {
  ensurePrivateDirectory(runDirectoryOf(home));
  const path = recordPath(home, record.server.pid);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(record)}\n`, { mode: RECORD_FILE_MODE });
  renameSync(temporary, path);
  return () => rmSync(path, { force: true });
}

/** The identity of process `pid` now, or undefined when it is gone or a zombie. */
export function identityOf(pid: number, source: ProcessSource = procfsSource()): ProcessIdentity | undefined {
  const entry = source.read(pid);
  return entry === undefined || isGone(entry) ? undefined : { pid, startTime: entry.startTime };
}

/** True while the process the identity names still runs. */
export function isRunning(identity: ProcessIdentity, source: ProcessSource = procfsSource()): boolean {
  const entry = source.read(identity.pid);
  return entry !== undefined && !isGone(entry) && entry.startTime === identity.startTime;
}

function isGone(entry: ProcessEntry): boolean {
  return entry.state === 'Z' || entry.state === 'X';
}

export interface ListOptions {
  readonly source?: ProcessSource;
  /** Remove the records of servers that are gone. Default true. */
  readonly removeStale?: boolean;
}

/** The records of live servers in `home`, oldest first. Unreadable or foreign files are skipped. */
export function listLiveServers(home: string, options: ListOptions = {}): ServerRecord[] {
  const source = options.source ?? procfsSource();
  let names: string[];
  try {
    names = readdirSync(runDirectoryOf(home));
  } catch {
    return [];
  }
  const live: ServerRecord[] = [];
  for (const name of names) {
    if (!/^mcp-\d+\.json$/.test(name)) continue;
    const path = join(runDirectoryOf(home), name);
    const record = readRecord(path);
    if (record === undefined) continue;
    if (isRunning(record.server, source)) {
      live.push(record);
      continue;
    }
    if (options.removeStale !== false) {
      rmSync(path, { force: true });
      // Its socket, when it lived beside the record (a killed server leaves both behind).
      if (record.socket.startsWith(`${runDirectoryOf(home)}/`)) rmSync(record.socket, { force: true });
    }
  }
  return live.sort((left, right) => left.startedAt - right.startedAt || left.server.pid - right.server.pid);
}

function readRecord(path: string): ServerRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
  const record = value as Partial<ServerRecord> | null;
  if (
    record?.schemaVersion !== SERVER_RECORD_SCHEMA_VERSION ||
    !isIdentity(record.server) ||
    !isIdentity(record.client) ||
    typeof record.sessionId !== 'string' ||
    typeof record.socket !== 'string' ||
    typeof record.startedAt !== 'number'
  ) {
    return undefined;
  }
  return record as ServerRecord;
}

function isIdentity(value: unknown): value is ProcessIdentity {
  const identity = value as Partial<ProcessIdentity> | null;
  return Number.isSafeInteger(identity?.pid) && Number.isSafeInteger(identity?.startTime);
}

/** Launchers a client may start `errand mcp` through: a shell (`sh -c`), npm's `npx` / `npm exec`. */
const LAUNCHER_PROGRAMS = new Set(['sh', 'bash', 'dash', 'zsh', 'npm', 'npx']);
const NODE_LAUNCHER_SCRIPTS = /(?:^|\/)(?:npx-cli\.js|npm-cli\.js|npx|npm)$/;
/** The most launchers skipped between a server and its client. */
const MAX_LAUNCHER_DEPTH = 4;

/** The command line of `pid`, or undefined when it cannot be read. */
export type CommandLineReader = (pid: number) => readonly string[] | undefined;

export const procfsCommandLine: CommandLineReader = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1')
      .split('\0')
      .filter((part) => part !== '');
  } catch {
    return undefined;
  }
};

function isLauncher(commandLine: readonly string[] | undefined): boolean {
  if (commandLine === undefined || commandLine.length === 0) return false;
  const program = (commandLine[0] as string).split('/').at(-1) as string;
  if (LAUNCHER_PROGRAMS.has(program)) return true;
  return /^node(?:js)?$/.test(program) && NODE_LAUNCHER_SCRIPTS.test(commandLine[1] ?? '');
}

/**
 * The client a server serves: its parent, or — when the client started it through a launcher (`sh -c`,
 * `npx errand mcp`) — the nearest ancestor that is not one. Undefined when the parent is gone.
 */
export function clientOf(
  pid: number,
  source: ProcessSource = procfsSource(),
  commandLine: CommandLineReader = procfsCommandLine,
): ProcessIdentity | undefined {
  let entry = source.read(pid);
  for (let depth = 0; entry !== undefined && entry.ppid > 1; depth += 1) {
    const parent = source.read(entry.ppid);
    if (parent === undefined || isGone(parent)) return undefined;
    if (depth >= MAX_LAUNCHER_DEPTH || !isLauncher(commandLine(parent.pid))) {
      return { pid: parent.pid, startTime: parent.startTime };
    }
    entry = parent;
  }
  return undefined;
}

/** The most ancestors a hook walks looking for its client. */
export const MAX_ANCESTOR_DEPTH = 16;

/** The hook's ancestors, nearest first (its parent, then that one's parent, ...), without pid 1. */
export function ancestorsOf(pid: number, source: ProcessSource = procfsSource()): ProcessIdentity[] {
  const ancestors: ProcessIdentity[] = [];
  let entry = source.read(pid);
  while (entry !== undefined && entry.ppid > 1 && ancestors.length < MAX_ANCESTOR_DEPTH) {
    const parent = source.read(entry.ppid);
    if (parent === undefined) break;
    ancestors.push({ pid: parent.pid, startTime: parent.startTime });
    entry = parent;
  }
  return ancestors;
}

/**
 * The servers a hook serves: those whose client is the hook's nearest ancestor that is any live server's
 * client. Every server of that one client is served (a client may run several `errand mcp`, for example
 * one per configuration scope), oldest first. A hook of a client that runs no Errand server matches
 * nothing, even when another client's server runs under the same shell: that shell is no server's client.
 */
export function serversOfClient(
  servers: readonly ServerRecord[],
  ancestors: readonly ProcessIdentity[],
): ServerRecord[] {
  for (const ancestor of ancestors) {
    const mine = servers.filter(
      (server) => server.client.pid === ancestor.pid && server.client.startTime === ancestor.startTime,
    );
    if (mine.length > 0) return mine;
  }
  return [];
}
