/**
 * Step names within one execution of a run. An explicit name may be used once; a default name (derived
 * from a command, prompt, duration or question) is numbered when repeated — `bash:npm test`,
 * `bash:npm test#2` — so the same script asks the journal for the same names on every execution.
 */
import { InvalidArgumentError } from '../../tasks/index.js';
import { WorkflowDuplicateStepError } from './errors.js';

const MAX_NAME_CHARACTERS = 200;
/** Suffix of the internal entry that stores a sleep's wake-up time. */
export const SLEEP_DEADLINE_SUFFIX = '@until';

export class StepNames {
  readonly #used = new Set<string>();
  readonly #occurrences = new Map<string, number>();

  /** Claims an explicit name. */
  explicit(name: unknown): string {
    if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_NAME_CHARACTERS) {
      throw new InvalidArgumentError('name', `a step name of 1-${MAX_NAME_CHARACTERS} characters`, name);
    }
    if (name.endsWith(SLEEP_DEADLINE_SUFFIX)) {
      throw new InvalidArgumentError(
        'name',
        `a step name that does not end with "${SLEEP_DEADLINE_SUFFIX}"`,
        name,
      );
    }
    if (this.#used.has(name)) throw new WorkflowDuplicateStepError(name);
    this.#used.add(name);
    return name;
  }

  /** The default name for `kind` and `subject`, numbered after its first use. */
  derived(kind: string, subject: string, explicit: string | undefined): string {
    if (explicit !== undefined) return this.explicit(explicit);
    const base = `${kind}:${subject.replace(/\s+/g, ' ').trim()}`.slice(0, MAX_NAME_CHARACTERS - 8);
    for (;;) {
      const count = (this.#occurrences.get(base) ?? 0) + 1;
      this.#occurrences.set(base, count);
      const name = count === 1 ? base : `${base}#${count}`;
      if (!this.#used.has(name)) {
        this.#used.add(name);
        return name;
      }
    }
  }
}
