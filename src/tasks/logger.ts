/** The logger every part of Errand warns through; inject one to route warnings (tests capture them). */

export interface Logger {
  warn(message: string, context?: Record<string, unknown>): void;
}

/** A logger that writes to `console.warn`, each line starting with `[<prefix>]`. */
export function createConsoleLogger(prefix: string): Logger {
  return Object.freeze({
    warn(message: string, context?: Record<string, unknown>) {
      // biome-ignore lint/suspicious/noConsole: the default logger of a library with no logger injected
      console.warn(`[${prefix}] ${message}`, context ?? '');
    },
  });
}

/** The default logger of a library with no logger injected. */
export const consoleLogger: Logger = createConsoleLogger('errand');

/** A logger that reports through `process.emitWarning` (type `ErrandWarning`): for hosts whose stdout is taken. */
export const emitWarningLogger: Logger = Object.freeze({
  warn(message: string, context?: Record<string, unknown>) {
    process.emitWarning(`${message}${context ? ` ${JSON.stringify(context)}` : ''}`, 'ErrandWarning');
  },
});
