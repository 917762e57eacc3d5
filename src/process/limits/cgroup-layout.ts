/**
 * Where this process may make cgroups: read once from `/proc/self/cgroup` and `/proc/self/mountinfo`.
 * cgroup v2 (one unified hierarchy, pure or hybrid) is used when a directory of it enables the controllers
 * the limits need; cgroup v1 when each needed controller has a hierarchy of its own (or shared, `cpu,cpuacct`).
 * New groups go under this process's own cgroup in each hierarchy (or a delegated `cgroupRoot`), so limits a
 * container or a service manager put on the runtime still hold for its commands.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The v1 controllers limits use: memory, pids, CPU share (`cpu`) and CPU time accounting (`cpuacct`). */
export type V1Controller = 'memory' | 'pids' | 'cpu' | 'cpuacct';

/** The v2 controllers limits use (CPU time is read from `cpu.stat`, present without any controller). */
export type V2Controller = 'memory' | 'pids' | 'cpu';

export type CgroupLayout =
  | { readonly version: 2; readonly base: string; readonly controllers: readonly V2Controller[] }
  | { readonly version: 1; readonly bases: Readonly<Partial<Record<V1Controller, string>>> };

/** One mount of a cgroup hierarchy, from mountinfo. */
export interface CgroupMount {
  readonly version: 1 | 2;
  /** The hierarchy path this mount shows at its mount point (usually `/`). */
  readonly root: string;
  readonly mountPoint: string;
  /** v1: the controllers bound to it (`memory`, `cpu`, `cpuacct`, ...). */
  readonly controllers: readonly string[];
}

/** One line of `/proc/<pid>/cgroup`: the process's path in a hierarchy (v2: controllers empty). */
export interface CgroupMembership {
  readonly version: 1 | 2;
  readonly controllers: readonly string[];
  readonly path: string;
}

/** mountinfo escapes spaces and the like as `\040`. */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** The cgroup mounts of a mountinfo text. */
export function parseCgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const separator = line.indexOf(' - ');
    if (separator < 0) continue;
    const before = line.slice(0, separator).split(' ');
    const after = line.slice(separator + 3).split(' ');
    const type = after[0];
    if (type !== 'cgroup' && type !== 'cgroup2') continue;
    const root = unescapeMountField(before[3] ?? '/');
    const mountPoint = unescapeMountField(before[4] ?? '');
    if (mountPoint === '') continue;
    const superOptions = (after[2] ?? '').split(',');
    const controllers =
      type === 'cgroup'
        ? superOptions.filter((option) => ['memory', 'pids', 'cpu', 'cpuacct'].includes(option))
        : [];
    mounts.push({ version: type === 'cgroup2' ? 2 : 1, root, mountPoint, controllers });
  }
  return mounts;
}

/** The lines of a `/proc/<pid>/cgroup` text. */
export function parseCgroupMemberships(text: string): CgroupMembership[] {
  const memberships: CgroupMembership[] = [];
  for (const line of text.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const id = line.slice(0, first);
    const controllers = line.slice(first + 1, second);
    const path = line.slice(second + 1);
    if (id === '0' && controllers === '') memberships.push({ version: 2, controllers: [], path });
    else memberships.push({ version: 1, controllers: controllers.split(','), path });
  }
  return memberships;
}

/** The directory of `path` (a hierarchy path) under a mount showing `mount.root`; undefined when outside it. */
function directoryIn(mount: CgroupMount, path: string): string | undefined {
  if (mount.root === '/') return join(mount.mountPoint, path);
  if (path === mount.root) return mount.mountPoint;
  if (!path.startsWith(`${mount.root}/`)) return undefined;
  return join(mount.mountPoint, path.slice(mount.root.length));
}

function writable(directory: string): boolean {
  try {
    accessSync(directory, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * The cgroup v2 directory to make groups under, when one enables (or can enable) `needed`: `cgroupRoot`,
 * or this process's own cgroup. Undefined when there is no v2 hierarchy, it lacks a controller, or it is
 * not writable.
 */
export function findV2Base(
  needed: readonly V2Controller[],
  mounts: readonly CgroupMount[],
  memberships: readonly CgroupMembership[],
  cgroupRoot?: string,
): string | undefined {
  let base = cgroupRoot;
  if (base === undefined) {
    const mount = mounts.find((candidate) => candidate.version === 2);
    const own = memberships.find((membership) => membership.version === 2);
    if (mount === undefined || own === undefined) return undefined;
    base = directoryIn(mount, own.path);
  }
  if (base === undefined || !writable(base)) return undefined;
  const available = (readText(join(base, 'cgroup.controllers')) ?? '').trim().split(/\s+/);
  if (!needed.every((controller) => available.includes(controller))) return undefined;
  return base;
}

/** The v1 directories to make groups under, one per needed controller; undefined when one is missing. */
export function findV1Bases(
  needed: readonly V1Controller[],
  mounts: readonly CgroupMount[],
  memberships: readonly CgroupMembership[],
): Partial<Record<V1Controller, string>> | undefined {
  const bases: Partial<Record<V1Controller, string>> = {};
  for (const controller of needed) {
    const mount = mounts.find(
      (candidate) => candidate.version === 1 && candidate.controllers.includes(controller),
    );
    const own = memberships.find(
      (membership) => membership.version === 1 && membership.controllers.includes(controller),
    );
    if (mount === undefined || own === undefined) return undefined;
    const base = directoryIn(mount, own.path);
    if (base === undefined || !writable(base)) return undefined;
    bases[controller] = base;
  }
  return bases;
}

/** Reads this process's mounts and memberships (`procRoot` is `/proc` but in tests). */
export function readCgroupTables(procRoot = '/proc'): {
  mounts: CgroupMount[];
  memberships: CgroupMembership[];
} {
  return {
    mounts: parseCgroupMounts(readText(join(procRoot, 'self', 'mountinfo')) ?? ''),
    memberships: parseCgroupMemberships(readText(join(procRoot, 'self', 'cgroup')) ?? ''),
  };
}
