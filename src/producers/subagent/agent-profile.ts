/**
 * Agent profiles: named configurations a subagent can run under — its system prompt, its model, and an
 * allowlist of the tools it may use. The `agent` tool's optional `profile` parameter names one.
 */
import type { ModelPort } from '../../session/index.js';
import { InvalidArgumentError } from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../../tasks/options.js';

/** A model, or a factory that produces one when a child starts (it may be asynchronous). */
export type ModelSource = ModelPort | (() => ModelPort | Promise<ModelPort>);

const PROFILE_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** A named child configuration. A key not declared here is rejected with `UNKNOWN_OPTION`. */
export const agentProfileOptions = defineOptions('createSubagentProducer', {
  /** 1-64 letters, digits, `_` or `-`; what the `profile` parameter names. */
  name: option.required(
    option.custom<string>(
      'a name of 1-64 letters, digits, "_" or "-"',
      (value) => typeof value === 'string' && PROFILE_NAME_PATTERN.test(value),
    ),
  ),
  /** What the profile is for, in one line; listed in the agent tool's description. */
  description: option.string({ nonEmpty: false }),
  /** The child's system prompt. Default: the producer's `systemPrompt`. */
  systemPrompt: option.string({ nonEmpty: false }),
  /** The child's model. Default: the producer's `model`. */
  model: option.custom<ModelSource>('a ModelPort or a function returning one', isModelSource),
  /** Names of the tools the child may use. Absent: every tool the producer gives children. */
  tools: option.list(option.string()),
  /** Whether a finished run can be resumed with a follow-up message under the same task id. Default true. */
  continuable: option.boolean(),
});

/** A named child configuration. */
export type AgentProfile = OptionsInput<typeof agentProfileOptions.rules>;
/** A profile as the producer keeps it, checked. */
export type ResolvedAgentProfile = ResolvedOptions<typeof agentProfileOptions.rules>;

/** Indexes checked profiles by name; two with one name are refused. */
export function indexProfiles(
  profiles: readonly ResolvedAgentProfile[],
  path = 'profiles',
): ReadonlyMap<string, ResolvedAgentProfile> {
  const index = new Map<string, ResolvedAgentProfile>();
  profiles.forEach((profile, position) => {
    if (index.has(profile.name)) {
      throw new InvalidArgumentError(
        `${path}[${position}].name`,
        'a name no other profile uses',
        profile.name,
      );
    }
    index.set(profile.name, profile);
  });
  return index;
}

export function isModelSource(value: unknown): value is ModelSource {
  if (typeof value === 'function') return true;
  return typeof value === 'object' && value !== null && typeof (value as ModelPort).generate === 'function';
}
