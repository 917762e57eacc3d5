/**
 * One cgroup of Errand's (the runtime's, a session's or a command's): its directory in each hierarchy, the
 * limits written into it, the counters that say a limit was hit, and its removal. v1 keeps one directory
 * per controller (`memory/…`, `pids/…`); v2 one directory for all of them.
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Controller, V2Controller } from './cgroup-layout.js';
import type { ResourceLimits } from './resource-limits.js';

/** What a group's counters say: OOM kills, refused forks, CPU time used (µs). */
export interface CgroupCounters {
  readonly oomKills: number;
  readonly forkFailures: number;
  readonly cpuMicros: number;
}

/** Where a v1 group lives per controller, or a v2 group's one directory. */
export type CgroupPlace =
  | { readonly version: 1; readonly dirs: Readonly<Partial<Record<V1Controller, string>>> }
  | { readonly version: 2; readonly dir: string; readonly controllers: readonly V2Controller[] };

const CFS_PERIOD_US = 100_000;

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** A `key value` line's value in a flat-keyed file (`oom_kill 3`); 0 when absent. */
export function keyedValue(text: string | undefined, key: string): number {
  if (text === undefined) return 0;
  for (const line of text.split('\n')) {
    const [name, value] = line.trim().split(/\s+/);
    if (name === key) return Number(value) || 0;
  }
  return 0;
}

function fileExists(path: string): boolean {
  return readText(path) !== undefined;
}

export class CgroupNode {
  readonly place: CgroupPlace;

  private constructor(place: CgroupPlace) {
    this.place = place;
  }

  /** The node at `place`, for reading and removal only (it exists already, e.g. a base directory). */
  static at(place: CgroupPlace): CgroupNode {
    return new CgroupNode(place);
  }

  /** Every directory of the group, each once (v1 `cpu` and `cpuacct` may share one). */
  get directories(): string[] {
    return this.place.version === 2
      ? [this.place.dir]
      : [...new Set(Object.values(this.place.dirs).filter((dir): dir is string => dir !== undefined))];
  }

  /** The files a process writes its pid into to join the group (one per hierarchy). */
  get procsFiles(): string[] {
    return this.directories.map((dir) => join(dir, 'cgroup.procs'));
  }

  /**
   * Makes the child group `name` with `limits`. A command's group (`leaf`) is killed as a whole on an OOM
   * (v2 `memory.oom.group`); an inner group (v2) enables its controllers for its children. Throws the
   * file system's error; what was made before it is removed.
   */
  child(name: string, limits: ResourceLimits, leaf: boolean): CgroupNode {
    const place: CgroupPlace =
      this.place.version === 2
        ? { version: 2, dir: join(this.place.dir, name), controllers: this.place.controllers }
        : {
            version: 1,
            dirs: Object.fromEntries(
              Object.entries(this.place.dirs).map(([controller, dir]) => [controller, join(dir, name)]),
            ),
          };
    const node = new CgroupNode(place);
    const made: string[] = [];
    try {
      for (const dir of node.directories) {
        mkdirSync(dir);
        made.push(dir);
      }
      node.#write(limits, leaf);
    } catch (error) {
      for (const dir of made.reverse()) {
        try {
          rmdirSync(dir);
        } catch {
          // Left for the leftover sweep.
        }
      }
      throw error;
    }
    return node;
  }

  #write(limits: ResourceLimits, leaf: boolean): void {
    const place = this.place;
    if (place.version === 2) {
      const dir = place.dir;
      if (!leaf && place.controllers.length > 0) {
        writeFileSync(
          join(dir, 'cgroup.subtree_control'),
          place.controllers.map((name) => `+${name}`).join(' '),
        );
      }
      if (limits.memoryBytes !== undefined) {
        writeFileSync(join(dir, 'memory.max'), String(limits.memoryBytes));
        // The limit is of memory, not of RAM: a command past it must not go on in swap.
        if (fileExists(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
      }
      if (leaf && place.controllers.includes('memory')) writeFileSync(join(dir, 'memory.oom.group'), '1');
      if (limits.pids !== undefined) writeFileSync(join(dir, 'pids.max'), String(limits.pids));
      if (limits.cpus !== undefined) {
        writeFileSync(join(dir, 'cpu.max'), `${cpuQuotaMicros(limits.cpus)} ${CFS_PERIOD_US}`);
      }
      return;
    }
    const { memory, pids, cpu } = place.dirs;
    if (limits.memoryBytes !== undefined && memory !== undefined) {
      writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      // With swap accounting, RAM and swap together (it may not be below the RAM limit, written first).
      const swap = join(memory, 'memory.memsw.limit_in_bytes');
      if (fileExists(swap)) writeFileSync(swap, String(limits.memoryBytes));
    }
    if (limits.pids !== undefined && pids !== undefined)
      writeFileSync(join(pids, 'pids.max'), String(limits.pids));
    if (limits.cpus !== undefined && cpu !== undefined) {
      const period = Number(readText(join(cpu, 'cpu.cfs_period_us'))) || CFS_PERIOD_US;
      writeFileSync(join(cpu, 'cpu.cfs_quota_us'), String(cpuQuotaMicros(limits.cpus, period)));
    }
  }

  /** The counters that say a limit was hit; a file that cannot be read counts 0. */
  counters(): CgroupCounters {
    const place = this.place;
    if (place.version === 2) {
      const dir = place.dir;
      return {
        oomKills: keyedValue(readText(join(dir, 'memory.events')), 'oom_kill'),
        forkFailures: keyedValue(readText(join(dir, 'pids.events')), 'max'),
        cpuMicros: keyedValue(readText(join(dir, 'cpu.stat')), 'usage_usec'),
      };
    }
    const { memory, pids, cpuacct } = place.dirs;
    const usage = cpuacct === undefined ? undefined : readText(join(cpuacct, 'cpuacct.usage'));
    return {
      oomKills:
        memory === undefined ? 0 : keyedValue(readText(join(memory, 'memory.oom_control')), 'oom_kill'),
      forkFailures: pids === undefined ? 0 : keyedValue(readText(join(pids, 'pids.events')), 'max'),
      cpuMicros: usage === undefined ? 0 : Math.floor((Number(usage.trim()) || 0) / 1000),
    };
  }

  /** How often the group's own memory limit was hit (v1 `memory.failcnt`, v2 `memory.events` max). */
  memoryLimitHits(): number {
    const place = this.place;
    if (place.version === 2) return keyedValue(readText(join(place.dir, 'memory.events')), 'max');
    const memory = place.dirs.memory;
    return memory === undefined ? 0 : Number(readText(join(memory, 'memory.failcnt'))) || 0;
  }

  /** The most processes the group held at once (`pids.peak`, else `pids.current`). */
  peakProcesses(): number {
    const dir = this.place.version === 2 ? this.place.dir : this.place.dirs.pids;
    if (dir === undefined) return 0;
    return Number(readText(join(dir, 'pids.peak')) ?? readText(join(dir, 'pids.current'))) || 0;
  }

  /** The pids in the group now (every hierarchy), each once. */
  members(): number[] {
    const pids = new Set<number>();
    for (const file of this.procsFiles) {
      for (const line of (readText(file) ?? '').split('\n')) {
        const pid = Number(line);
        if (Number.isSafeInteger(pid) && pid > 0) pids.add(pid);
      }
    }
    return [...pids];
  }

  /**
   * Removes the group's directories. A process still in it is one of its command's (a process leaves only
   * by being moved, which a command cannot do without privileges): it is sent SIGKILL first. True once
   * every directory is gone; false when one is still busy (try again once the killed processes vanished).
   */
  remove(): boolean {
    for (const pid of this.members()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    let removed = true;
    for (const dir of this.directories) {
      try {
        rmdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') removed = false;
      }
    }
    return removed;
  }
}

/** A CPU share as a CFS quota per period, at least the kernel's minimum of 1 ms. */
function cpuQuotaMicros(cpus: number, period = CFS_PERIOD_US): number {
  return Math.max(1000, Math.round(cpus * period));
}
