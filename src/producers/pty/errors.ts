/** Errors of the pty producer: a missing optional dependency, and input to a terminal that has closed. */
import { ErrandError } from '../../tasks/index.js';

/** The command that installs the optional dependency, named in the error so a person can act on it. */
export const NODE_PTY_INSTALL_HINT = 'npm install node-pty@1.1.0';

/**
 * node-pty is an optional dependency (a native addon built from source). When it is missing or fails to
 * load, pty tasks cannot start; surfaces check `isPtyAvailable()` and omit the pty tools instead.
 */
export class PtyUnavailableError extends ErrandError {
  constructor(cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      'PTY_UNAVAILABLE',
      'system',
      `Pseudo-terminal tasks need the optional dependency node-pty, which could not be loaded (${firstLine(reason)}). ` +
        `Install it with \`${NODE_PTY_INSTALL_HINT}\` (it compiles a native addon: python3, make and a C++ compiler are needed), ` +
        'or leave the pty tools out.',
      { cause, context: { dependency: 'node-pty' } },
    );
  }
}

/** Input or a resize reached a pseudo-terminal whose program has already exited. */
export class PtyClosedError extends ErrandError {
  constructor(pid: number | undefined) {
    super(
      'PTY_CLOSED',
      'caller',
      `The pseudo-terminal${pid === undefined ? '' : ` of process ${pid}`} has closed; it accepts no more input`,
      { context: { pid } },
    );
  }
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

/** A pty producer that was disposed starts nothing more. */
export class PtyProducerDisposedError extends ErrandError {
  constructor() {
    super('PTY_PRODUCER_DISPOSED', 'caller', 'The pty producer is disposed; it starts no more tasks');
  }
}
