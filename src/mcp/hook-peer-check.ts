/**
 * Who may take a session's notifications through its hook socket: only the registered client's own
 * processes. A reachable socket is not a way in: the peer of each connection is named (`peerProcessesOf`)
 * and refused when any process holding it is another user's, in another pid or user namespace (every
 * sandboxed command is), a descendant of this server (one of its commands), tagged as a command of a
 * runtime (a tag value this server does not carry itself), or — when the client is known — not the client
 * or one of its descendants.
 */
import type { Socket } from 'node:net';
import {
  describePeer,
  LIFELINE_TAG_VARIABLE,
  type PeerFacts,
  peerProcessesOf,
  procfsSource,
} from '../process/index.js';
import { PROCESS_TAG_VARIABLE } from '../producers/bash/executor-options.js';
import { PTY_TAG_VARIABLE } from '../producers/pty/pty-process.js';

/** The environment variables that mark a process of a runtime's command trees. */
export const COMMAND_TAG_VARIABLES: readonly string[] = Object.freeze([
  PROCESS_TAG_VARIABLE,
  PTY_TAG_VARIABLE,
  LIFELINE_TAG_VARIABLE,
]);

export interface HookPeerPolicy {
  /** The registered client (pid and start time): only it and its descendants are served. */
  readonly client?: { readonly pid: number; readonly startTime: number } | undefined;
}

/** Why `facts` may not take notifications, or undefined when it may. */
export function refusalOf(facts: PeerFacts, policy: HookPeerPolicy): string | undefined {
  const self = procfsSource().read(process.pid);
  if (facts.uid !== process.getuid?.()) return `process ${facts.pid} belongs to another user`;
  if (!facts.sameNamespaces) {
    return `process ${facts.pid} is in another pid or user namespace (a sandboxed command)`;
  }
  if (
    facts.ancestors.some((ancestor) => ancestor.pid === process.pid && ancestor.startTime === self?.startTime)
  ) {
    return `process ${facts.pid} was started by this server (one of its commands)`;
  }
  for (const variable of COMMAND_TAG_VARIABLES) {
    // An outer runtime's tag that this server carries too (the client runs inside one) is not ours.
    if (facts.variables.has(variable) && process.env[variable] === undefined) {
      return `process ${facts.pid} is a runtime's command (it carries ${variable})`;
    }
  }
  const { client } = policy;
  if (client !== undefined) {
    const isClient = facts.pid === client.pid;
    const ofClient = facts.ancestors.some(
      (ancestor) => ancestor.pid === client.pid && ancestor.startTime === client.startTime,
    );
    if (!isClient && !ofClient) return `process ${facts.pid} is not a process of the registered client`;
  }
  return undefined;
}

/** Why the peer of `socket` is refused, or undefined when every process holding it passes. */
export async function checkHookPeer(socket: Socket, policy: HookPeerPolicy): Promise<string | undefined> {
  let pids: number[];
  try {
    pids = await peerProcessesOf(socket);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  for (const pid of pids) {
    const refusal = refusalOf(describePeer(pid), policy);
    if (refusal !== undefined) return refusal;
  }
  return undefined;
}
