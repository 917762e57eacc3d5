/** The sandbox profiles, apart from the sandbox itself so that `errand mcp`'s flags load nothing else. */

/**
 * - `read-only`: the whole filesystem read-only, a private empty `/tmp`, a pid namespace of its own;
 * - `workspace-write`: the same, plus writes under the workspace (the session's working directory);
 * - `full`: the user's own rights (no filesystem confinement; with the network off it still runs in bwrap).
 */
export type SandboxProfile = 'read-only' | 'workspace-write' | 'full';

export const SANDBOX_PROFILES: readonly SandboxProfile[] = Object.freeze([
  'read-only',
  'workspace-write',
  'full',
]);
