/**
 * bubblewrap (`bwrap`), which the sandbox profiles run commands under, found the way a person has it
 * installed: `$ERRAND_BWRAP`, else `bwrap` on PATH. Missing, a sandbox suite is skipped with one line;
 * with `ERRAND_REQUIRE_EXTERNALS=1` (CI) missing is an error.
 */
import { type ExternalRequirement, type ResolveOptions, requireExternal } from './external-requirement.js';

export const BUBBLEWRAP_REQUIREMENT: ExternalRequirement = {
  name: 'bubblewrap (bwrap)',
  neededBy: 'the sandbox tests',
  variables: ['ERRAND_BWRAP'],
  commands: ['bwrap'],
  install: 'Debian/Ubuntu: sudo apt-get install bubblewrap',
};

/** bwrap's path, or undefined after one skip line (an error where externals are required). */
export function findBubblewrap(options?: ResolveOptions): string | undefined {
  return requireExternal(BUBBLEWRAP_REQUIREMENT, options);
}
