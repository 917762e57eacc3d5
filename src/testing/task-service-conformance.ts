/**
 * The TaskService conformance suite: black-box cases every provider of the contract must pass — the
 * in-process one, a durable or distributed one, a third party's. It defines its cases through the test
 * functions the caller hands in (vitest, node:test, mocha and jest all fit) and asserts with
 * `node:assert/strict`, so it needs no test framework of its own at runtime.
 */
import {
  CaseContext,
  CONFORMANCE_CONTROLLER,
  type LoggedWarning,
  type TaskServiceConformanceFactory,
} from './conformance/case-context.js';
import { changeFeedCases } from './conformance/change-feed-cases.js';
import type { ConformanceCase, ConformanceGroup } from './conformance/conformance-case.js';
import { cursorCases } from './conformance/cursor-cases.js';
import { identityCases } from './conformance/identity-cases.js';
import { disposalCases, ownerLifecycleCases, retentionCases } from './conformance/lifecycle-cases.js';
import { preflightCases } from './conformance/preflight-cases.js';
import { readingCases, waitingCases } from './conformance/reading-cases.js';
import { claimCases, settlementCases, stoppingCases } from './conformance/settlement-cases.js';

export type {
  ConformanceLimits,
  LoggedWarning,
  TaskServiceConformanceFactory,
  TaskServiceConformanceSetup,
  TaskServiceConformanceSubject,
} from './conformance/case-context.js';

/** The test-definition functions of the caller's framework. */
export interface ConformanceTestFunctions {
  /** Opens a named group; called synchronously while tests are collected. */
  readonly describe: (name: string, body: () => void) => unknown;
  /** Defines one test whose body returns a promise; a rejection fails it. */
  readonly it: (name: string, body: () => Promise<void>) => unknown;
}

export interface TaskServiceConformanceOptions {
  /** The title of the outer group. Default `TaskService conformance`. */
  readonly name?: string;
  /** About how long a case waits for something the contract promises (a settlement seen). Default 2000. */
  readonly patienceMs?: number;
}

/** Every group of cases, in the order they are defined. */
const GROUPS: readonly ConformanceGroup[] = [
  preflightCases,
  identityCases,
  readingCases,
  cursorCases,
  waitingCases,
  settlementCases,
  stoppingCases,
  claimCases,
  ownerLifecycleCases,
  retentionCases,
  disposalCases,
  changeFeedCases,
];

/**
 * Defines the conformance cases with the caller's `describe` and `it`. Each case asks `factory` for a
 * fresh, empty provider (ids start at 1), attaches a service-wide controller unless the case is about
 * having none, and disposes the provider (then calls `cleanup`) when it ends, passed or failed.
 */
export function describeTaskServiceConformance(
  test: ConformanceTestFunctions,
  factory: TaskServiceConformanceFactory,
  options: TaskServiceConformanceOptions = {},
): void {
  if (typeof test?.describe !== 'function' || typeof test.it !== 'function') {
    throw new TypeError('describeTaskServiceConformance needs { describe, it } from a test framework');
  }
  if (typeof factory !== 'function') throw new TypeError('describeTaskServiceConformance needs a factory');
  const patienceMs = options.patienceMs ?? 2_000;
  test.describe(options.name ?? 'TaskService conformance', () => {
    for (const group of GROUPS) {
      test.describe(group.name, () => {
        for (const conformanceCase of group.cases) {
          test.it(conformanceCase.name, () => runCase(conformanceCase, factory, patienceMs));
        }
      });
    }
  });
}

async function runCase(
  conformanceCase: ConformanceCase,
  factory: TaskServiceConformanceFactory,
  patienceMs: number,
): Promise<void> {
  const warnings: LoggedWarning[] = [];
  const subject = await factory({
    ...conformanceCase.limits,
    logger: { warn: (message, context) => void warnings.push({ message, context }) },
  });
  const context = new CaseContext(subject, warnings, patienceMs);
  if (conformanceCase.controller !== false) subject.tasks.attachController(CONFORMANCE_CONTROLLER);
  let failure: unknown;
  try {
    await conformanceCase.run(context);
  } catch (error) {
    failure = error;
  }
  try {
    await context.close();
  } catch (error) {
    // The case's own failure says more than the cleanup's.
    failure ??= error;
  }
  if (failure !== undefined) throw failure;
}
