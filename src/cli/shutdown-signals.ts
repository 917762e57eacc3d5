/**
 * SIGINT / SIGTERM handling for long-running commands: the first signal starts a clean shutdown; a
 * second one exits at once (exit code 130), for when the clean shutdown itself hangs.
 */

export interface ShutdownSignalOptions {
  /** Told before a second signal ends the process. */
  readonly onForce?: () => void;
  readonly signals?: readonly NodeJS.Signals[];
}

/** Calls `shutdown` on the first signal; returns the function that removes the handlers. */
export function onShutdownSignal(shutdown: () => unknown, options: ShutdownSignalOptions = {}): () => void {
  const signals = options.signals ?? ['SIGINT', 'SIGTERM'];
  let received = false;
  const handler = () => {
    if (received) {
      options.onForce?.();
      process.exit(130);
    }
    received = true;
    void shutdown();
  };
  for (const signal of signals) process.on(signal, handler);
  return () => {
    for (const signal of signals) process.off(signal, handler);
  };
}
