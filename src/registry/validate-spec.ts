/** Validation of task specs and producer hooks, before anything runs. */

import {
  InvalidTaskSpecError,
  isValidTaskKind,
  ProducerContractError,
  type TaskFacts,
  type TaskHooks,
  type TaskOutputStream,
  type TaskSpec,
} from '../tasks/index.js';
import { isTraceparent } from '../tracing/index.js';

export const MAX_LABEL_LENGTH = 2000;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** `kindKnown`: the kind was validated before (the registry has a counter for it), so the pattern is skipped. */
export function validateSpec(spec: TaskSpec, kindKnown = false): void {
  if (!isPlainObject(spec) && (typeof spec !== 'object' || spec === null)) {
    throw new InvalidTaskSpecError('spec', 'an object', spec);
  }
  if (!kindKnown && !isValidTaskKind(spec.kind)) {
    throw new InvalidTaskSpecError('kind', 'a lowercase kind of 1-32 letters, digits or "_"', spec.kind);
  }
  if (typeof spec.label !== 'string' || spec.label.trim() === '' || spec.label.length > MAX_LABEL_LENGTH) {
    throw new InvalidTaskSpecError(
      'label',
      `a non-empty string of at most ${MAX_LABEL_LENGTH} characters`,
      spec.label,
    );
  }
  if (typeof spec.run !== 'function') {
    throw new InvalidTaskSpecError('run', 'a function', spec.run);
  }
  if (
    spec.outputLimitBytes !== undefined &&
    (!Number.isSafeInteger(spec.outputLimitBytes) || spec.outputLimitBytes < 1)
  ) {
    throw new InvalidTaskSpecError('outputLimitBytes', 'a positive integer', spec.outputLimitBytes);
  }
  if (spec.background !== undefined && typeof spec.background !== 'boolean') {
    throw new InvalidTaskSpecError('background', 'a boolean', spec.background);
  }
  if (
    spec.branchGeneration !== undefined &&
    (!Number.isSafeInteger(spec.branchGeneration) || spec.branchGeneration < 0)
  ) {
    throw new InvalidTaskSpecError('branchGeneration', 'a non-negative integer', spec.branchGeneration);
  }
  if (spec.traceparent !== undefined && !isTraceparent(spec.traceparent)) {
    throw new InvalidTaskSpecError(
      'traceparent',
      'a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)',
      spec.traceparent,
    );
  }
  if (spec.detail !== undefined && !isPlainObject(spec.detail)) {
    throw new InvalidTaskSpecError('detail', 'a plain object', spec.detail);
  }
  if (
    spec.owner !== undefined &&
    (typeof spec.owner !== 'object' || spec.owner === null || !spec.owner.sessionId)
  ) {
    throw new InvalidTaskSpecError('owner', 'an Owner from createOwner()', spec.owner);
  }
}

export function validateDetailPatch(patch: TaskFacts): TaskFacts {
  if (!isPlainObject(patch)) throw new InvalidTaskSpecError('detail', 'a plain object', patch);
  return patch;
}

/** Hooks that break the contract cannot be registered: there would be no way to stop or settle the work. */
export function validateHooks(kind: string, hooks: unknown): TaskHooks {
  if (typeof hooks !== 'object' || hooks === null) {
    throw new ProducerContractError(`The ${kind} producer's run() returned no hooks`);
  }
  const candidate = hooks as Partial<TaskHooks>;
  if (typeof candidate.cancel !== 'function') {
    throw new ProducerContractError(`The ${kind} producer's hooks have no cancel() function`);
  }
  if (typeof (candidate.done as Promise<unknown> | undefined)?.then !== 'function') {
    throw new ProducerContractError(`The ${kind} producer's hooks have no done promise`);
  }
  if (candidate.readOutput !== undefined && typeof candidate.readOutput !== 'function') {
    throw new ProducerContractError(`The ${kind} producer's readOutput is not a function`);
  }
  const output = candidate.output as Partial<TaskOutputStream> | undefined;
  if (
    output !== undefined &&
    (typeof output !== 'object' ||
      output === null ||
      typeof output.read !== 'function' ||
      typeof output.onGrow !== 'function' ||
      !Number.isSafeInteger(output.end) ||
      !Number.isSafeInteger(output.retainedFrom))
  ) {
    throw new ProducerContractError(
      `The ${kind} producer's output is not a TaskOutputStream (end, retainedFrom, read, onGrow)`,
    );
  }
  if (candidate.detach !== undefined && typeof candidate.detach !== 'function') {
    throw new ProducerContractError(`The ${kind} producer's detach is not a function`);
  }
  return candidate as TaskHooks;
}
