/**
 * The lifeline sidecar: a small process a runtime starts once, in a process group and session of its own
 * (a terminal's Ctrl-C to the runtime's group does not reach it), that outlives the runtime by a pipe.
 * The runtime tells it, on its stdin, about every non-durable process tree it starts and stops; when that
 * stdin reaches end of file without a `release` first, the runtime died — by any means, SIGKILL included —
 * and the sidecar stops every process of those trees, plus every process carrying the runtime's
 * environment tag (which closes the race of a runtime killed between a spawn and telling the sidecar),
 * then exits. SIGTERM and SIGCONT first, SIGKILL after the grace, each signal guarded by the start time
 * the census just read. Durable trees are never told and carry no runtime tag: they are left alone.
 *
 * It spawns nothing: every command is spawned by the runtime itself, so a sidecar that is stopped, slow or
 * gone never holds a start, and never carries out a start for a runtime that is already dead. Its only
 * other message is `ping`, answered `pong`, by which the runtime knows it still reads (see `Lifeline`).
 *
 *     node lifeline-sidecar.js --runtime-tag ERRAND_LIFELINE=<id> [--kill-grace-ms 500]
 */
import { systemClock } from '../../tasks/clock.js';
import { parseEnvironmentTag } from '../trees/process-identity.js';
import { ProcessSweep } from '../trees/process-sweep.js';
import { isDead, memoizedSource, type ProcessEntry, procfsSource } from '../trees/process-table.js';
import { censusTree, type EnvironmentTag } from '../trees/process-tree.js';
import { writeStatusFile } from './exit-status-file.js';
import {
  decodeMessage,
  encodeMessage,
  LIFELINE_PROTOCOL_VERSION,
  readWatch,
  type SidecarMessage,
  type WatchMessage,
} from './lifeline-protocol.js';

/** A line longer than this is not a message of ours: it is dropped. */
const MAX_LINE_BYTES = 64 * 1024;
const DEFAULT_KILL_GRACE_MS = 500;

interface WatchedTree {
  readonly message: WatchMessage;
  readonly tag: EnvironmentTag | undefined;
  /** pid → start time of members a census found. */
  readonly known: Map<number, number>;
  hadMembers: boolean;
}

function argument(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

function send(message: SidecarMessage): void {
  process.stdout.write(encodeMessage(message));
}

const runtimeTag = parseEnvironmentTag(argument('--runtime-tag'));
const graceArgument = Number(argument('--kill-grace-ms') ?? DEFAULT_KILL_GRACE_MS);
const killGraceMs =
  Number.isSafeInteger(graceArgument) && graceArgument > 0 ? graceArgument : DEFAULT_KILL_GRACE_MS;
const trees = new Map<string, WatchedTree>();
let released = false;

// The runtime may be gone when we answer: a closed stdout is not ours to report.
process.stdout.on('error', () => {});

function handle(line: string): void {
  const message = decodeMessage(line);
  if (message === undefined) return;
  switch (message.type) {
    case 'watch': {
      const watch = readWatch(message);
      if (watch === undefined) {
        send({ type: 'error', of: 'watch', message: 'malformed watch message' });
        return;
      }
      trees.set(watch.key, {
        message: watch,
        tag: parseEnvironmentTag(watch.tag),
        known: new Map(),
        hadMembers: false,
      });
      return;
    }
    case 'unwatch':
      if (typeof message.key === 'string') trees.delete(message.key);
      return;
    case 'release':
      released = true;
      return;
    case 'ping':
      if (typeof message.seq === 'number') send({ type: 'pong', seq: message.seq });
      return;
    default:
      send({
        type: 'error',
        of: message.type,
        message: `unsupported message type ${JSON.stringify(message.type)}`,
      });
  }
}

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  pending += chunk;
  for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
    handle(pending.slice(0, end));
    pending = pending.slice(end + 1);
  }
  if (pending.length > MAX_LINE_BYTES) pending = '';
});
process.stdin.on('end', () => void finish());
process.stdin.on('error', () => void finish());

let finishing = false;
async function finish(): Promise<void> {
  if (finishing) return;
  finishing = true;
  if (!released && runtimeTag !== undefined) await stopEverything(runtimeTag);
  process.exit(0);
}

/** Stops every told tree and every process carrying the runtime's tag; records which told trees it stopped. */
async function stopEverything(tag: EnvironmentTag): Promise<void> {
  const source = memoizedSource(procfsSource());
  const watched = [...trees.values()];
  // One read of the table per round, shared by every tree: dozens of trees must not read /proc dozens of times.
  const census = (): ProcessEntry[] => {
    const table: ProcessEntry[] = [];
    for (const pid of source.listPids()) {
      const entry = source.read(pid);
      if (entry !== undefined) table.push(entry);
    }
    const byPid = new Map(table.map((entry) => [entry.pid, entry]));
    const found = new Map<number, ProcessEntry>();
    for (const tree of watched) {
      const { pid, startTime } = tree.message;
      const root = byPid.get(pid);
      const treeTag = tree.tag;
      // The root is the process that was told only while its start time fits and it carries its tree's tag.
      const rootIsOurs =
        root !== undefined &&
        root.startTime >= startTime &&
        (treeTag === undefined || source.environmentValue(pid, treeTag.name) === treeTag.value);
      const isTagged =
        treeTag === undefined
          ? undefined
          : (candidate: number) => source.environmentValue(candidate, treeTag.name) === treeTag.value;
      const members = censusTree({ pid, startTime }, table, {
        rootAlive: rootIsOurs,
        known: tree.known,
        exclude: process.pid,
        ...(isTagged === undefined ? {} : { isTagged }),
      }).members;
      for (const member of members) {
        tree.known.set(member.pid, member.startTime);
        tree.hadMembers = true;
        found.set(member.pid, member);
      }
    }
    for (const entry of table) {
      if (entry.pid === process.pid || found.has(entry.pid) || isDead(entry)) continue;
      if (source.environmentValue(entry.pid, tag.name) === tag.value) found.set(entry.pid, entry);
    }
    return [...found.values()];
  };
  const at = systemClock.now();
  const recorded = new Set<WatchedTree>();
  // Recorded before the signals go out: a viewer that finds the tree gone finds why at the same time.
  const record = () => {
    for (const tree of watched) {
      if (!tree.hadMembers || recorded.has(tree) || tree.message.statusFile === undefined) continue;
      recorded.add(tree);
      writeStatusFile(tree.message.statusFile, { kind: 'stopped', by: 'lifeline', at });
    }
  };
  const first = census();
  record();
  let initial: ProcessEntry[] | undefined = first;
  await new ProcessSweep({
    census: () => {
      const members = initial ?? census();
      initial = undefined;
      return members;
    },
    clock: systemClock,
    killGraceMs,
    logger: { warn: () => {} },
  }).run();
  record();
}

send({ type: 'ready', protocol: LIFELINE_PROTOCOL_VERSION, pid: process.pid });
