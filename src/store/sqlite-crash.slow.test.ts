/**
 * Crash safety of the SQLite store: a real child process runs ledger traffic on the real store code and is
 * killed with SIGKILL mid-run, eight times over the same file (checkpointing on its thread meanwhile). Each time the reopened file holds a
 * consistent ledger and every delivery the child saw committed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteSessionStore } from './sqlite-session-store.js';

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, '../..');
const fixture = join(here, 'fixtures', 'crash-writer.mjs');

const ROUNDS = 8;

let work: string;
let storeModuleUrl: string;

/** Compiles the store and the contract it imports to plain JavaScript the child can run. */
function buildStore(outputRoot: string): string {
  for (const unit of ['tasks', 'store']) {
    const sourceDirectory = join(repository, 'src', unit);
    const names = readdirSync(sourceDirectory, { recursive: true, encoding: 'utf8' });
    for (const name of names) {
      if (!name.endsWith('.ts') || name.endsWith('.test.ts')) continue;
      const source = readFileSync(join(sourceDirectory, name), 'utf8');
      const { outputText } = ts.transpileModule(source, {
        fileName: name,
        compilerOptions: {
          module: ts.ModuleKind.ES2022,
          target: ts.ScriptTarget.ES2022,
          verbatimModuleSyntax: true,
        },
      });
      const target = join(outputRoot, 'src', unit, name.replace(/\.ts$/, '.js'));
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, outputText);
    }
  }
  // The compiled store resolves better-sqlite3 from the repository's dependencies.
  symlinkSync(join(repository, 'node_modules'), join(outputRoot, 'node_modules'), 'dir');
  return pathToFileURL(join(outputRoot, 'src', 'store', 'index.js')).href;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'errand-crash-'));
  storeModuleUrl = buildStore(join(work, 'build'));
});

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

interface Delivery {
  readonly seq: number;
  readonly ids: readonly number[];
}

interface ChildRun {
  readonly deliveries: readonly Delivery[];
  readonly ready: string;
}

/**
 * Runs the writer until it reported `deliveriesBeforeKill` deliveries, then kills it with SIGKILL after a
 * random few milliseconds: killing right on a report would always land just after a commit. Where the kill
 * lands does not decide the test; every landing point must leave a consistent file.
 */
function runAndKill(file: string, round: number, deliveriesBeforeKill: number): Promise<ChildRun> {
  return new Promise((resolvePromise, reject) => {
    const child: ChildProcess = spawn(process.execPath, [fixture, storeModuleUrl, file, String(round)], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const deliveries: Delivery[] = [];
    let ready: string | undefined;
    let buffered = '';
    let stderr = '';
    let killed = false;
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const [word, first, second] = line.split(' ');
        if (word === 'ready') ready = line;
        if (word === 'delivered') {
          deliveries.push({ seq: Number(first), ids: (second ?? '').split(',').map(Number) });
        }
      }
      if (!killed && ready !== undefined && deliveries.length >= deliveriesBeforeKill) {
        killed = true;
        setTimeout(() => child.kill('SIGKILL'), Math.random() * 12);
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL' && killed && ready !== undefined) resolvePromise({ deliveries, ready });
      else reject(new Error(`The writer ended on its own (code ${code}, signal ${signal}): ${stderr}`));
    });
  });
}

function checkConsistency(file: string, acknowledged: readonly Delivery[]): void {
  const raw = new Database(file);
  try {
    expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(raw.pragma('foreign_key_check')).toEqual([]);
  } finally {
    raw.close();
  }
  const store = openSqliteSessionStore({ file, pruneOnOpen: false });
  try {
    const entries = store.listLedger('s');
    const messages = new Map(
      store.listMessages('s', { includeAbandoned: true }).map((message) => [message.seq, message]),
    );
    const keysById = new Map(entries.map((entry) => [entry.id, entry.idempotencyKey]));
    const carried = new Map<string, number>();
    for (const message of messages.values()) {
      const keys = (message.content.text ?? '').split(',');
      for (const key of keys) {
        expect(carried.has(key), `${key} delivered in two messages`).toBe(false);
        carried.set(key, message.seq);
      }
    }
    for (const entry of entries) {
      expect(['queued', 'delivered', 'discarded']).toContain(entry.state);
      if (entry.state === 'delivered') {
        expect(messages.has(entry.deliveredInMessageSeq!), `entry ${entry.id} has no message`).toBe(true);
        expect(carried.get(entry.idempotencyKey)).toBe(entry.deliveredInMessageSeq);
      } else {
        expect(
          carried.has(entry.idempotencyKey),
          `${entry.idempotencyKey} is in a message but ${entry.state}`,
        ).toBe(false);
      }
    }
    // Every message's entries are all delivered with it: never half a delivery.
    for (const [key, seq] of carried) {
      const entry = entries.find((candidate) => candidate.idempotencyKey === key);
      expect(entry?.state).toBe('delivered');
      expect(entry?.deliveredInMessageSeq).toBe(seq);
    }
    // What the child saw committed survived the kill.
    for (const delivery of acknowledged) {
      expect(messages.has(delivery.seq), `acknowledged delivery ${delivery.seq} lost`).toBe(true);
      for (const id of delivery.ids) {
        expect(carried.get(keysById.get(id)!)).toBe(delivery.seq);
      }
    }
  } finally {
    store.close();
  }
}

describe('SQLite store under SIGKILL', () => {
  it('reopens to a consistent ledger after each kill, with every acknowledged delivery', async () => {
    const file = join(work, 'data', 'errand.sqlite');
    const acknowledged: Delivery[] = [];
    let residue: number[] = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      const run = await runAndKill(file, round, 20);
      acknowledged.push(...run.deliveries);
      // The killed process left committed pages in the write-ahead log for recovery to replay.
      expect(statSync(`${file}-wal`).size).toBeGreaterThan(32);
      checkConsistency(file, acknowledged);
      const store = openSqliteSessionStore({ file, pruneOnOpen: false });
      try {
        // The entries left queued by the previous kill were discarded on resume, never delivered late.
        expect(run.ready).toMatch(new RegExp(`^ready ${residue.length} \\d+$`));
        for (const id of residue) {
          expect(store.getLedgerEntry(id)).toMatchObject({ state: 'discarded', reason: 'session_resumed' });
        }
        residue = store.listQueued('s').map((entry) => entry.id);
        if (round > 1)
          expect(store.listTasks({ sessionId: 's', statuses: ['lost'] }).length).toBeGreaterThan(0);
      } finally {
        store.close();
      }
    }
    expect(acknowledged.length).toBeGreaterThanOrEqual(20 * ROUNDS);
  });
});
