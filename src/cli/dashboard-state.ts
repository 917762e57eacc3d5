/**
 * The data directory's own dashboard, so a person using Errand through an MCP client can open it
 * without reading any log: its settings (`dashboard.json`, 0600: the access token and the port it last
 * listened on, reused so the URL stays the same) and, while an `errand serve` runs, its record
 * (`run/dashboard.json`, 0600: the process and the port). The URL carries the token, so it is only ever
 * printed to the person who asked — never written into a model's context.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { identityOf, isRunning, type ProcessIdentity, runDirectoryOf } from '../hooks/index.js';
import { generateAccessToken, MIN_TOKEN_LENGTH } from '../server/access-token.js';
import { ensurePrivateDirectory } from '../store/data-directory.js';

const SCHEMA_VERSION = 1;
const FILE_MODE = 0o600;

export interface DashboardSettings {
  readonly token: string;
  /** The port the dashboard last listened on; undefined before the first start. */
  readonly port: number | undefined;
}

export interface RunningDashboard {
  readonly process: ProcessIdentity;
  readonly port: number;
}

const settingsPath = (home: string) => join(home, 'dashboard.json');
const recordPath = (home: string) => join(runDirectoryOf(home), 'dashboard.json');

function writePrivate(path: string, value: unknown): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(value)}\n`, { mode: FILE_MODE });
  renameSync(temporary, path);
}

function readJson(path: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The dashboard's settings, created (with a new random token) the first time. */
export function loadDashboardSettings(home: string): DashboardSettings {
  ensurePrivateDirectory(home);
  const saved = readJson(settingsPath(home));
  const token = saved?.token;
  const port = saved?.port;
  if (typeof token === 'string' && token.length >= MIN_TOKEN_LENGTH) {
    return { token, port: Number.isInteger(port) ? (port as number) : undefined };
  }
  const created = { token: generateAccessToken(), port: undefined };
  writePrivate(settingsPath(home), { schemaVersion: SCHEMA_VERSION, token: created.token });
  return created;
}

/** Remembers the port the dashboard listens on, for the next start. */
export function saveDashboardPort(home: string, settings: DashboardSettings, port: number): void {
  writePrivate(settingsPath(home), { schemaVersion: SCHEMA_VERSION, token: settings.token, port });
}

/** Records this process as the data directory's running dashboard; returns the function that removes it. */
export function recordRunningDashboard(home: string, port: number): () => void {
  ensurePrivateDirectory(runDirectoryOf(home));
  const self = identityOf(process.pid);
  writePrivate(recordPath(home), { schemaVersion: SCHEMA_VERSION, process: self, port });
  return () => {
    // Only our own record: a later dashboard may have replaced it.
    if (runningDashboard(home)?.process.pid === process.pid) rmSync(recordPath(home), { force: true });
  };
}

/** The dashboard running for `home`, if its process is still alive. */
export function runningDashboard(home: string): RunningDashboard | undefined {
  const record = readJson(recordPath(home));
  const identity = record?.process as ProcessIdentity | undefined;
  const port = record?.port;
  if (
    record?.schemaVersion !== SCHEMA_VERSION ||
    !Number.isSafeInteger(identity?.pid) ||
    !Number.isSafeInteger(identity?.startTime) ||
    !Number.isInteger(port)
  ) {
    return undefined;
  }
  return isRunning(identity as ProcessIdentity)
    ? { process: identity as ProcessIdentity, port: port as number }
    : undefined;
}

export function dashboardUrl(port: number, token: string): string {
  return `http://127.0.0.1:${port}/?token=${encodeURIComponent(token)}`;
}
