/**
 * What a tool's description tells the model about the sandbox its commands run in, so that a refused
 * write or connection reads as the boundary it is, not as a bug to work around.
 */
import type { Sandbox } from '../process/index.js';

/** The sentence for a tool's description; undefined when nothing is confined. */
export function describeSandbox(sandbox: Sandbox | undefined): string | undefined {
  if (sandbox === undefined || !sandbox.confines) return undefined;
  const files =
    sandbox.profile === 'read-only'
      ? 'the filesystem is read-only except a private, empty /tmp'
      : sandbox.profile === 'workspace-write'
        ? "it may write only under the session's working directory and a private, empty /tmp"
        : 'the filesystem is not confined';
  const processes = sandbox.profile === 'full' ? '' : '; it sees and can signal only its own processes';
  const network = sandbox.network
    ? 'the network is reachable'
    : "it has no network (only a private loopback: connections to this machine's services fail too)";
  return `Commands run in a sandbox (profile ${sandbox.summary}): ${files}${processes}; ${network}. A command that crosses the boundary fails with the system's error (e.g. "Read-only file system", "Network is unreachable"); do not try to work around it.`;
}
