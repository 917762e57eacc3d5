/**
 * Agent profiles: named configurations a subagent can run under — its system prompt, its model, and an
 * allowlist of the tools it may use. The `agent` tool's optional `profile` parameter names one.
 */
import type { ModelPort } from '../../session/index.js';
import { InvalidArgumentError } from '../../tasks/index.js';
import { optionKeys } from '../../tasks/option-keys.js';

/** A model, or a factory that produces one when a child starts (it may be asynchronous). */
export type ModelSource = ModelPort | (() => ModelPort | Promise<ModelPort>);

/** A named child configuration. A key not listed here is rejected with `UNKNOWN_OPTION`. */
export interface AgentProfile {
  /** 1-64 letters, digits, `_` or `-`; what the `profile` parameter names. */
  readonly name: string;
  /** What the profile is for, in one line; listed in the agent tool's description. */
  readonly description?: string;
  /** The child's system prompt. Default: the producer's `systemPrompt`. */
  readonly systemPrompt?: string;
  /** The child's model. Default: the producer's `model`. */
  readonly model?: ModelSource;
  /** Names of the tools the child may use. Absent: every tool the producer gives children. */
  readonly tools?: readonly string[];
  /** Whether a finished run can be resumed with a follow-up message under the same task id. Default true. */
  readonly continuable?: boolean;
}

/** Every key of `AgentProfile`; any other key is rejected with `UNKNOWN_OPTION` (by the producer). */
export const AGENT_PROFILE_KEYS = optionKeys<AgentProfile>()({
  name: true,
  description: true,
  systemPrompt: true,
  model: true,
  tools: true,
  continuable: true,
});

const PROFILE_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Validates the profiles and indexes them by name. */
export function indexProfiles(
  profiles: readonly AgentProfile[] | undefined,
): ReadonlyMap<string, AgentProfile> {
  const index = new Map<string, AgentProfile>();
  if (profiles === undefined) return index;
  if (!Array.isArray(profiles))
    throw new InvalidArgumentError('profiles', 'an array of agent profiles', profiles);
  profiles.forEach((profile, position) => {
    const field = `profiles[${position}]`;
    if (typeof profile !== 'object' || profile === null) {
      throw new InvalidArgumentError(field, 'an agent profile object', profile);
    }
    if (typeof profile.name !== 'string' || !PROFILE_NAME_PATTERN.test(profile.name)) {
      throw new InvalidArgumentError(
        `${field}.name`,
        'a name of 1-64 letters, digits, "_" or "-"',
        profile.name,
      );
    }
    if (index.has(profile.name)) {
      throw new InvalidArgumentError(`${field}.name`, 'a name no other profile uses', profile.name);
    }
    for (const key of ['description', 'systemPrompt'] as const) {
      if (profile[key] !== undefined && typeof profile[key] !== 'string') {
        throw new InvalidArgumentError(`${field}.${key}`, 'a string', profile[key]);
      }
    }
    if (profile.model !== undefined && !isModelSource(profile.model)) {
      throw new InvalidArgumentError(
        `${field}.model`,
        'a ModelPort or a function returning one',
        profile.model,
      );
    }
    if (
      profile.tools !== undefined &&
      (!Array.isArray(profile.tools) || profile.tools.some((name: unknown) => typeof name !== 'string'))
    ) {
      throw new InvalidArgumentError(`${field}.tools`, 'an array of tool names', profile.tools);
    }
    if (profile.continuable !== undefined && typeof profile.continuable !== 'boolean') {
      throw new InvalidArgumentError(`${field}.continuable`, 'a boolean', profile.continuable);
    }
    index.set(profile.name, Object.freeze({ ...profile }));
  });
  return index;
}

export function isModelSource(value: unknown): value is ModelSource {
  if (typeof value === 'function') return true;
  return typeof value === 'object' && value !== null && typeof (value as ModelPort).generate === 'function';
}
