/** The logger the bash producer warns through; inject one to route warnings (tests capture them). */

export interface BashLogger {
  warn(message: string, context?: Record<string, unknown>): void;
}

export const consoleBashLogger: BashLogger = Object.freeze({
  warn(message: string, context?: Record<string, unknown>) {
    // biome-ignore lint/suspicious/noConsole: the default logger of a library with no logger injected
    console.warn(`[errand:bash] ${message}`, context ?? '');
  },
});
