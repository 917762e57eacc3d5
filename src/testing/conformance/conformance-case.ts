/** The shape of one conformance case: a name, what the provider must be set up with, and its body. */
import type { CaseContext, ConformanceLimits } from './case-context.js';

export interface ConformanceCase {
  readonly name: string;
  /** Limits the factory is asked to apply (absent: the provider's defaults). */
  readonly limits?: ConformanceLimits;
  /** Whether the suite attaches a service-wide controller before the body runs. Default true. */
  readonly controller?: boolean;
  run(context: CaseContext): Promise<void>;
}

/** A named group of cases (one `describe`). */
export interface ConformanceGroup {
  readonly name: string;
  readonly cases: readonly ConformanceCase[];
}
