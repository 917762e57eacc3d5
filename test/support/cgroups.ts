/**
 * Whether this machine lets a test make cgroups (cgroup v1 or v2 with the memory, pids, cpu and cpuacct
 * controllers, writable: usually root). Without them a limits suite is skipped with one line; under
 * ERRAND_REQUIRE_EXTERNALS=1 (CI) that is an error instead.
 */
import { ResourceLimiter } from '../../src/process/index.js';

/** Why the cgroup suites are skipped, or undefined when cgroups can be made here. Probed once. */
let probed: string | null | undefined;

export function cgroupSkipReason(): string | undefined {
  if (probed === undefined) {
    let reason: string | null = null;
    try {
      const limiter = new ResourceLimiter({
        task: { memoryBytes: 64 * 1024 * 1024, pids: 64, cpus: 1, cpuTimeMs: 1000 },
        logger: { warn: () => {} },
      });
      if (limiter.mechanism === 'rlimit')
        reason =
          'no writable cgroup hierarchy with memory, pids, cpu and cpuacct (needs root, or a delegated cgroup v2 subtree)';
      limiter.dispose();
    } catch (error) {
      reason = `cgroups cannot be made here (${String(error)})`;
    }
    if (reason !== null && process.env.ERRAND_REQUIRE_EXTERNALS === '1') {
      throw new Error(`required, but ${reason}`);
    }
    if (reason !== null) process.stderr.write(`skipping the cgroup limit tests: ${reason}\n`);
    probed = reason;
  }
  return probed ?? undefined;
}
