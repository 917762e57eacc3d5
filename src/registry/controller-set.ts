/**
 * The task controllers attached to a service and the owners each serves: the answer to "can this owner
 * collect and stop this work?" that `start` asks before a producer runs.
 */
import { type ControllerScope, type Disposer, InvalidArgumentError, type Owner } from '../tasks/index.js';
import { defineOptions, option } from '../tasks/options.js';

const isOwner = (value: unknown) => typeof (value as Partial<Owner> | null)?.sessionId === 'string';

/** The keys of a `ControllerScope` (the contract documents them). */
const controllerScopeOptions = defineOptions(
  'attachController',
  {
    /** The one session the controller serves. Not with `serves`. */
    owner: option.custom<Owner>('an Owner from createOwner()', isOwner),
    /** Which sessions the controller serves. Not with `owner`. */
    serves: option.func<(owner: Owner) => boolean>(),
    /** Whether it serves ownerless work too. Default false. */
    ownerless: option.boolean({ default: false }),
  },
  {
    check({ owner, serves, ownerless }) {
      if (owner !== undefined && serves !== undefined) {
        throw new InvalidArgumentError('scope', 'either `owner` or `serves`, not both', { owner, serves });
      }
      if (owner === undefined && serves === undefined && !ownerless) {
        throw new InvalidArgumentError(
          'scope',
          'a scope that serves someone (`owner`, `serves` or `ownerless`)',
          { ownerless },
        );
      }
    },
  },
);

/** One attached controller: which owners it serves, and whether it serves ownerless work. */
interface Controller {
  readonly servesOwner: ((owner: Owner) => boolean) | undefined;
  readonly ownerless: boolean;
}

/** A controller without a scope: every owner and ownerless work. */
const SERVICE_WIDE: Controller = Object.freeze({ servesOwner: () => true, ownerless: true });

export class ControllerSet {
  /** Copy-on-write: a predicate that attaches or detaches while `serves` runs does not disturb it. */
  #controllers: readonly Controller[] = [];

  attach(name: string, scope: ControllerScope | undefined): Disposer {
    if (typeof name !== 'string' || name === '') {
      throw new InvalidArgumentError('name', 'a non-empty string', name);
    }
    // A fresh object per attachment: detaching one never detaches another with the same scope.
    const controller: Controller = { ...controllerOf(scope) };
    this.#controllers = [...this.#controllers, controller];
    return () => {
      this.#controllers = this.#controllers.filter((candidate) => candidate !== controller);
    };
  }

  /** Whether some attached controller serves background work of `owner` (undefined: ownerless work). */
  serves(owner: Owner | undefined): boolean {
    for (const controller of this.#controllers) {
      if (owner === undefined ? controller.ownerless : controller.servesOwner?.(owner) === true) return true;
    }
    return false;
  }
}

function controllerOf(scope: ControllerScope | undefined): Controller {
  if (scope === undefined) return SERVICE_WIDE;
  if (typeof scope !== 'object' || scope === null) {
    throw new InvalidArgumentError('scope', 'an object with `owner`, `serves` or `ownerless`', scope);
  }
  const { owner, serves, ownerless } = controllerScopeOptions.resolve(scope);
  const sessionId = owner?.sessionId;
  const servesOwner: Controller['servesOwner'] =
    sessionId !== undefined ? (candidate) => candidate.sessionId === sessionId : serves;
  return { servesOwner, ownerless };
}
