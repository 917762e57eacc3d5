/**
 * The sandbox flags `errand mcp` and `errand chat` share: `--sandbox <profile>` and `--no-network`, read
 * into the runtime's `sandbox` option. A missing bwrap is reported by the runtime (`SANDBOX_UNAVAILABLE`,
 * naming Debian's `bubblewrap` package): the command prints it and exits 1, never running unconfined.
 */
// From its file, not the folder's index: `errand mcp` parses its flags before loading the runtime.
import type { SandboxOptions } from '../process/launch/sandbox.js';
import { SANDBOX_PROFILES, type SandboxProfile } from '../process/launch/sandbox-profiles.js';
import { type FlagSpecs, UsageError } from './args.js';

export const SANDBOX_FLAGS: FlagSpecs = {
  sandbox: {
    type: 'string',
    placeholder: '<profile>',
    description: `confine commands with bubblewrap: ${SANDBOX_PROFILES.join(', ')} (default: none)`,
  },
  'no-network': {
    type: 'boolean',
    description: 'commands get no network, not even this machine (with --sandbox, or alone: full files)',
  },
};

/** The runtime's `sandbox` option from parsed flags; undefined when neither flag was given. */
export function sandboxFromFlags(values: Readonly<Record<string, unknown>>): SandboxOptions | undefined {
  const profile = values.sandbox;
  const network = values['no-network'] !== true;
  if (profile === undefined) return network ? undefined : { profile: 'full', network: false };
  if (typeof profile !== 'string' || !SANDBOX_PROFILES.includes(profile as SandboxProfile)) {
    throw new UsageError(
      `Expected \`--sandbox\` to be one of ${SANDBOX_PROFILES.join(', ')}, got ${JSON.stringify(profile)}`,
    );
  }
  return { profile: profile as SandboxProfile, network };
}
