/**
 * Environment tags for process trees: `<variable>=<value>`, a value no other tree carries. Every process a
 * tree's root starts inherits it, so the census finds descendants that left the root's session.
 */
import { randomUUID } from 'node:crypto';
import type { EnvironmentTag } from './process-tree.js';

export class ProcessTags {
  readonly #variable: string;
  /** A random nonce plus a counter: unique without drawing randomness per process. */
  readonly #prefix = randomUUID();
  #count = 0;

  constructor(variable: string) {
    this.#variable = variable;
  }

  /** A tag no earlier call (of any instance) returned. */
  next(): EnvironmentTag {
    this.#count += 1;
    return { name: this.#variable, value: `${this.#prefix}.${this.#count}` };
  }
}
