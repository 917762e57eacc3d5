/**
 * Hosts on one machine, for the across-hosts suites and `bench:scale-hosts`: each host is a network
 * namespace with one link (a veth pair) to a switch (a bridge in a namespace of its own, so nothing
 * touches the machine's own network), an address on 10.77.0.0/24, and — for each process started on it —
 * a mount namespace (`ip netns exec` makes one) in which the host's own directories are bound over
 * `/root` (its HOME) and `/tmp`: no host sees another's files there. The switch partitions a host (its
 * port stops forwarding, both sides' links stay up, as when a switch between them fails), adds latency
 * and loss to its link (`tc netem` on both ends, or, on a kernel without `sch_netem`, a user-space
 * shaper spliced between the port and the bridge: `netns-shaper.py`), and a host dies whole (every
 * process in its namespace SIGKILLed at once).
 *
 * Needs root, `ip` (iproute2) and network namespaces; without them a suite is skipped with one line
 * (an error under ERRAND_REQUIRE_EXTERNALS=1, as in CI). `destroy()` kills every process of every
 * namespace, deletes the namespaces (their links go with them) and the hosts' directories, whatever
 * state a failed test left; a lab a crashed run left behind is swept by the next one.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ExternalRequirement,
  ExternalRequirementError,
  externalsRequired,
  requireExternal,
} from './external-requirement.js';

export const NETNS_REQUIREMENT: ExternalRequirement = {
  name: 'iproute2 (ip, tc) with network namespaces, as root',
  neededBy: 'the across-hosts suites (network namespaces as hosts)',
  variables: ['ERRAND_IP'],
  commands: ['ip'],
  install: 'Debian/Ubuntu: sudo apt-get install iproute2, and run as root',
};

const PYTHON_REQUIREMENT: ExternalRequirement = {
  name: 'python3',
  neededBy: "the across-hosts suites' user-space link shaper (this kernel has no sch_netem)",
  variables: ['ERRAND_PYTHON'],
  commands: ['python3'],
  install: 'Debian/Ubuntu: sudo apt-get install python3',
};

/** The repository, from here or from the benchmarks' compiled copy (`.bench/test/support/`). */
export const REPO_ROOT = new URL(
  import.meta.url.includes('/.bench/') ? '../../../' : '../../',
  import.meta.url,
).pathname;
const shaperScript = join(REPO_ROOT, 'test', 'support', 'netns-shaper.py');
const SUBNET = '10.77.0';
const NAME_PREFIX = 'errand-';

export interface NetnsAbility {
  readonly ip: string;
  /** Whether `tc qdisc … netem` works here; without it latency and loss go through the user-space shaper. */
  readonly netem: boolean;
  readonly python?: string;
}

let probed: NetnsAbility | { readonly reason: string } | undefined;

function run(file: string, args: readonly string[]): { ok: boolean; out: string } {
  const result = spawnSync(file, args, { encoding: 'utf8' });
  return { ok: result.status === 0, out: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() };
}

function must(file: string, args: readonly string[]): string {
  const result = run(file, args);
  if (!result.ok) throw new Error(`${file} ${args.join(' ')} failed: ${result.out}`);
  return result.out;
}

function probe(ip: string): NetnsAbility | { readonly reason: string } {
  if (process.getuid?.() !== 0) return { reason: 'needs root to make network namespaces' };
  const name = `${NAME_PREFIX}${process.pid}-probe`;
  try {
    const added = run(ip, ['netns', 'add', name]);
    if (!added.ok) return { reason: `\`ip netns add\` fails here: ${added.out}` };
    const veth = run(ip, ['-n', name, 'link', 'add', 'pa', 'type', 'veth', 'peer', 'name', 'pb']);
    if (!veth.ok) return { reason: `veth pairs cannot be made here: ${veth.out}` };
    const bridge = run(ip, ['-n', name, 'link', 'add', 'br0', 'type', 'bridge']);
    if (!bridge.ok) return { reason: `bridges cannot be made here: ${bridge.out}` };
    const netem = run('tc', ['-n', name, 'qdisc', 'add', 'dev', 'pa', 'root', 'netem', 'delay', '1ms']).ok;
    if (netem) return { ip, netem };
    const python = requireExternal(PYTHON_REQUIREMENT);
    if (python === undefined) return { reason: 'no python3 for the link shaper (no sch_netem either)' };
    return { ip, netem, python };
  } finally {
    run(ip, ['netns', 'del', name]);
  }
}

/**
 * What this machine can do, or undefined after one skip line (an error where externals are required).
 * Probed once per process.
 */
export function findNetns(write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)) {
  if (probed === undefined) {
    const ip = requireExternal(NETNS_REQUIREMENT, { write });
    if (ip === undefined) return undefined;
    probed = probe(ip);
  }
  if ('reason' in probed) {
    const line = `Skipping ${NETNS_REQUIREMENT.neededBy}: ${probed.reason}.`;
    if (externalsRequired()) {
      throw new ExternalRequirementError(
        `${line.replace(/^Skipping /, 'Cannot run ')} ERRAND_REQUIRE_EXTERNALS is set, so this is an error, not a skip.`,
      );
    }
    write(line);
    return undefined;
  }
  return probed;
}

export interface Impairment {
  /** Added to every frame, each way, in ms. */
  readonly delayMs: number;
  /** A uniform ± spread around `delayMs`, in ms. */
  readonly jitterMs?: number;
  /** Frames dropped at random, each way, in percent. */
  readonly lossPercent?: number;
}

export interface HostProcess {
  readonly host: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it wrote so far, stdout and stderr together. */
  output(): string;
  /** Resolves with the first match of `pattern` in its output (rejects when it exits first). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends `signal` (default SIGTERM) and resolves once it is reaped. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface LabHost {
  readonly name: string;
  readonly namespace: string;
  readonly address: string;
  /** The host's `/tmp` and HOME (`/root` on the host) as seen from outside. */
  readonly tmp: string;
  readonly home: string;
  /**
   * Starts `file args` on the host: its network namespace, a mount namespace with its own `/root` and
   * `/tmp`, HOME=/root and TMPDIR=/tmp, the rest of this process's environment (so the leak check sees it).
   */
  spawn(
    file: string,
    args: readonly string[],
    options?: { readonly env?: Record<string, string>; readonly stdin?: boolean },
  ): HostProcess;
  /** Runs a short command in the host's network namespace only (no private mounts), synchronously. */
  exec(file: string, args: readonly string[]): string;
}

export interface Lab {
  readonly ability: NetnsAbility;
  readonly hosts: readonly LabHost[];
  host(name: string): LabHost;
  /** The switch stops forwarding the host's frames, both ways; both ends of its link stay up. */
  partition(name: string): void;
  heal(name: string): void;
  /** Latency and loss on the host's link, each way (replaces an earlier impairment). */
  impair(name: string, impairment: Impairment): Promise<void>;
  unimpair(name: string): Promise<void>;
  /** Pids of every process in the host's network namespace. */
  processesOn(name: string): number[];
  /** SIGKILLs every process on the host at once (and again, until none is left); resolves with the signals sent. */
  killHost(name: string): Promise<number>;
  /** Kills everything, deletes every namespace and link and the hosts' directories. Idempotent. */
  destroy(): void;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function pidsIn(ip: string, namespace: string): number[] {
  const result = run(ip, ['netns', 'pids', namespace]);
  if (!result.ok) return [];
  return result.out
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => Number.isInteger(pid) && pid > 0 && pid !== process.pid);
}

function killAll(ip: string, namespace: string): number {
  let killed = 0;
  for (let round = 0; round < 20; round += 1) {
    const pids = pidsIn(ip, namespace);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed += 1;
      } catch {
        // Gone meanwhile.
      }
    }
    spawnSync('sleep', ['0.05']);
  }
  return killed;
}

function deleteNamespace(ip: string, namespace: string): void {
  killAll(ip, namespace);
  run(ip, ['netns', 'del', namespace]);
}

/** Deletes the namespaces of labs whose process is gone (a crashed run's). */
function sweepLeftovers(ip: string): void {
  const list = run(ip, ['netns', 'list']);
  if (!list.ok) return;
  for (const line of list.out.split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const owner = new RegExp(`^${NAME_PREFIX}(\\d+)-`).exec(name);
    if (owner && !alive(Number(owner[1]))) deleteNamespace(ip, name);
  }
}

let labs = 0;
const live = new Set<Lab>();
let exitHookInstalled = false;

/**
 * The binds that keep the repository visible on a host whose `/root` and `/tmp` are its own: for a
 * checkout under either, [source, mount point inside the host's directory]; the mount point is made here.
 */
function repositoryBinds(home: string, tmp: string): string[] {
  const repository = REPO_ROOT.replace(/\/+$/, '');
  for (const [covered, own] of [
    ['/root', home],
    ['/tmp', tmp],
  ] as const) {
    if (!repository.startsWith(`${covered}/`)) continue;
    const point = join(own, repository.slice(covered.length));
    mkdirSync(point, { recursive: true });
    return [repository, point];
  }
  return [];
}

function spawnOnHost(
  host: { name: string; namespace: string; tmp?: string; home?: string },
  ip: string,
  file: string,
  args: readonly string[],
  options: { readonly env?: Record<string, string>; readonly stdin?: boolean } = {},
): HostProcess {
  // `ip netns exec` enters the network namespace and makes a mount namespace (mounts propagate into it
  // from the machine, never out): the binds below are this process's and its children's alone.
  // Without them (the switch's own processes) the machine's file system as it is.
  // The repository (Errand's build, its node_modules, the fixtures) stays at its path on every host: a
  // checkout under /tmp or /root is bound into the host's own directory first, and the host's directories
  // go over /tmp and /root with their submounts (--rbind).
  const script =
    'set -e; home=$1; tmp=$2; shift 2; while [ "$1" != "--" ]; do mount --bind "$1" "$2"; shift 2; done; ' +
    'shift; mount --rbind "$home" /root; mount --rbind "$tmp" /tmp; exec "$@"';
  const own = host.home !== undefined && host.tmp !== undefined;
  const child = spawn(
    ip,
    own
      ? [
          'netns',
          'exec',
          host.namespace,
          'sh',
          '-c',
          script,
          'errand-host',
          host.home!,
          host.tmp!,
          ...repositoryBinds(host.home!, host.tmp!),
          '--',
          file,
          ...args,
        ]
      : ['netns', 'exec', host.namespace, file, ...args],
    {
      env: { ...process.env, ...(own ? { HOME: '/root', TMPDIR: '/tmp' } : {}), ...options.env },
      stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      for (const listener of listeners) listener();
      resolve({ code, signal });
    }),
  );
  return {
    host: host.name,
    child,
    pid: child.pid!,
    exited,
    output: () => output,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(output);
          if (match) {
            done();
            resolve(match);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            done();
            reject(new Error(`${file} on ${host.name} exited before ${pattern}: ${output}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${file} on ${host.name}: no ${pattern} within ${timeoutMs} ms: ${output}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Makes the hosts `names` (short: letters and digits, at most 8) on a switch of their own. */
export async function createLab(ability: NetnsAbility, names: readonly string[]): Promise<Lab> {
  const { ip } = ability;
  sweepLeftovers(ip);
  labs += 1;
  const stem = `${NAME_PREFIX}${process.pid}-${labs}`;
  const root = mkdtempSync(join(tmpdir(), 'errand-lab-'));
  const switchNs = `${stem}-sw`;
  const namespaces: string[] = [switchNs];
  const shapers = new Map<string, HostProcess>();
  let destroyed = false;

  const destroy = () => {
    if (destroyed) return;
    destroyed = true;
    live.delete(lab);
    // Hosts first (their processes may hold the taps' peers), the switch last.
    for (const namespace of [...namespaces].reverse()) deleteNamespace(ip, namespace);
    rmSync(root, { recursive: true, force: true });
  };

  const hosts: LabHost[] = [];
  const lab: Lab = {
    ability,
    hosts,
    host(name) {
      const host = hosts.find((entry) => entry.name === name);
      if (!host) throw new Error(`no host ${name} in this lab`);
      return host;
    },
    partition(name) {
      lab.host(name);
      must('bridge', ['-n', switchNs, 'link', 'set', 'dev', portOf(name), 'state', '0']);
    },
    heal(name) {
      lab.host(name);
      must('bridge', ['-n', switchNs, 'link', 'set', 'dev', portOf(name), 'state', '3']);
    },
    async impair(name, impairment) {
      const host = lab.host(name);
      await lab.unimpair(name);
      const delay = `${impairment.delayMs}ms`;
      const jitter = `${impairment.jitterMs ?? 0}ms`;
      const loss = `${impairment.lossPercent ?? 0}%`;
      if (ability.netem) {
        const netem = ['netem', 'delay', delay, jitter, 'loss', loss];
        must('tc', ['-n', switchNs, 'qdisc', 'replace', 'dev', portOf(name), 'root', ...netem]);
        must('tc', ['-n', host.namespace, 'qdisc', 'replace', 'dev', 'eth0', 'root', ...netem]);
        return;
      }
      // The port leaves the bridge; its frames go through the shaper's tap `a`, which hands them on
      // (late, or not at all) through its tap `b`, the bridge's new port for this host — and back.
      const port = portOf(name);
      const [tapA, tapB] = [`t-${name}a`, `t-${name}b`];
      const shaper = spawnOnSwitch(ability.python!, [
        shaperScript,
        tapA,
        tapB,
        String(impairment.delayMs),
        String(impairment.jitterMs ?? 0),
        String(impairment.lossPercent ?? 0),
      ]);
      shapers.set(name, shaper);
      await shaper.waitFor(/READY/, 15_000);
      const tcIn = (from: string, to: string) => {
        must('tc', ['-n', switchNs, 'qdisc', 'add', 'dev', from, 'ingress']);
        must('tc', [
          '-n',
          switchNs,
          'filter',
          'add',
          'dev',
          from,
          'parent',
          'ffff:',
          'protocol',
          'all',
          'u32',
          'match',
          'u32',
          '0',
          '0',
          'action',
          'mirred',
          'egress',
          'redirect',
          'dev',
          to,
        ]);
      };
      must(ip, ['-n', switchNs, 'link', 'set', port, 'nomaster']);
      must(ip, ['-n', switchNs, 'link', 'set', tapA, 'up']);
      must(ip, ['-n', switchNs, 'link', 'set', tapB, 'master', 'br0', 'up']);
      tcIn(port, tapA);
      tcIn(tapA, port);
    },
    async unimpair(name) {
      const host = lab.host(name);
      if (ability.netem) {
        run('tc', ['-n', switchNs, 'qdisc', 'del', 'dev', portOf(name), 'root']);
        run('tc', ['-n', host.namespace, 'qdisc', 'del', 'dev', 'eth0', 'root']);
        return;
      }
      const shaper = shapers.get(name);
      if (!shaper) return;
      shapers.delete(name);
      run('tc', ['-n', switchNs, 'qdisc', 'del', 'dev', portOf(name), 'ingress']);
      await shaper.stop('SIGTERM');
      // Its taps went with it.
      must(ip, ['-n', switchNs, 'link', 'set', portOf(name), 'master', 'br0']);
    },
    processesOn(name) {
      return pidsIn(ip, lab.host(name).namespace);
    },
    async killHost(name) {
      const killed = killAll(ip, lab.host(name).namespace);
      return killed;
    },
    destroy,
  };
  live.add(lab);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const left of [...live]) left.destroy();
    });
  }

  const portOf = (name: string) => `p-${name}`;
  const spawnOnSwitch = (file: string, args: readonly string[]) =>
    spawnOnHost({ name: 'switch', namespace: switchNs }, ip, file, args, { stdin: true });

  try {
    must(ip, ['netns', 'add', switchNs]);
    must(ip, ['-n', switchNs, 'link', 'set', 'lo', 'up']);
    must(ip, ['-n', switchNs, 'link', 'add', 'br0', 'type', 'bridge']);
    must(ip, ['-n', switchNs, 'link', 'set', 'br0', 'up']);
    names.forEach((name, index) => {
      if (!/^[a-z][a-z0-9]{0,7}$/.test(name))
        throw new Error(`host name ${name}: letters and digits, at most 8`);
      const namespace = `${stem}-${name}`;
      must(ip, ['netns', 'add', namespace]);
      namespaces.push(namespace);
      const address = `${SUBNET}.${10 + index}`;
      must(ip, [
        '-n',
        switchNs,
        'link',
        'add',
        portOf(name),
        'type',
        'veth',
        'peer',
        'name',
        'eth0',
        'netns',
        namespace,
      ]);
      must(ip, ['-n', switchNs, 'link', 'set', portOf(name), 'master', 'br0', 'up']);
      must(ip, ['-n', namespace, 'link', 'set', 'lo', 'up']);
      must(ip, ['-n', namespace, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
      must(ip, ['-n', namespace, 'link', 'set', 'eth0', 'up']);
      const dir = join(root, name);
      const host = {
        name,
        namespace,
        address,
        tmp: join(dir, 'tmp'),
        home: join(dir, 'home'),
      };
      mkdirSync(host.tmp, { recursive: true, mode: 0o1777 });
      mkdirSync(host.home, { recursive: true, mode: 0o700 });
      hosts.push({
        ...host,
        spawn: (file, args, options) => spawnOnHost(host, ip, file, args, options),
        exec: (file, args) => must(ip, ['netns', 'exec', namespace, file, ...args]),
      });
    });
  } catch (error) {
    destroy();
    throw error;
  }
  return lab;
}
