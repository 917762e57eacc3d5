/**
 * judgeLeftTask against a status file that appears while the tree is judged: what outlives a runtime (the
 * lifeline, a durable command's wrapper) writes it before the tree ends, so a tree found gone after a
 * first read found no status file is judged by the file as it is then, never called lost for the race.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ProcessSource, type RecordedEnd, writeStatusFile } from '../process/index.js';
import type { StoredTask } from '../store/records.js';
import { judgeLeftTask } from './reconcile.js';

const directories: string[] = [];

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function statusFile(): string {
  const directory = mkdtempSync(join(tmpdir(), 'errand-reconcile-'));
  directories.push(directory);
  return join(directory, 'task.status');
}

function record(overrides: Partial<StoredTask> & Pick<StoredTask, 'statusFile'>): StoredTask {
  return {
    schemaVersion: 1,
    id: 'bash-1',
    sessionId: 'session-a',
    kind: 'bash',
    label: 'sleep',
    status: 'running',
    detail: {},
    isBackgrounded: true,
    branchGeneration: 0,
    stopInitiator: undefined,
    startedAt: 1,
    endedAt: undefined,
    reported: false,
    error: undefined,
    resultText: undefined,
    outputFile: undefined,
    traceparent: undefined,
    updatedAt: 1,
    process: { pid: 4242, startTime: 100, bootId: 'boot-a', pgid: 4242, tag: 'ERRAND_PROCESS_TAG=t1' },
    durable: false,
    readOffset: 0,
    ...overrides,
  } as StoredTask;
}

/** A table in which the tree is gone; `onFirstLook` runs when the judge first reads it. */
function goneTable(onFirstLook: () => void): ProcessSource {
  let looked = false;
  const look = () => {
    if (looked) return;
    looked = true;
    onFirstLook();
  };
  return {
    listPids: () => {
      look();
      return [];
    },
    read: () => {
      look();
      return undefined;
    },
    environmentValue: () => undefined,
    lastPid: () => undefined,
    clockTicks: () => 1000,
    bootId: () => 'boot-a',
  };
}

describe('judgeLeftTask', () => {
  it.each<[string, boolean, RecordedEnd, object]>([
    [
      "the lifeline's stop",
      false,
      { kind: 'stopped', by: 'lifeline', at: 5 },
      { kind: 'ended', outcome: { status: 'killed', detail: { reason: 'runtime_died', stoppedAt: 5 } } },
    ],
    ['a durable exit', true, { kind: 'exited', exitCode: 4 }, { kind: 'exited', exitCode: 4 }],
  ])('reads %s written while the tree was judged, not lost for the race', (_, durable, end, verdict) => {
    const path = statusFile();
    const task = record({ statusFile: path, durable });
    // Written after the judge's first look at the status file, before it found the tree gone.
    expect(
      judgeLeftTask(
        task,
        goneTable(() => writeStatusFile(path, end)),
      ),
    ).toMatchObject(verdict);
  });

  it('calls a tree lost when no status file appears', () => {
    const task = record({ statusFile: statusFile() });
    expect(
      judgeLeftTask(
        task,
        goneTable(() => {}),
      ),
    ).toEqual({ kind: 'lost', lostCase: 'ended_unwatched' });
    expect(
      judgeLeftTask(
        { ...task, durable: true },
        goneTable(() => {}),
      ),
    ).toEqual({
      kind: 'lost',
      lostCase: 'status_not_captured',
    });
  });
});
