/** The pty producer: interactive programs in pseudo-terminals as background tasks, and their tools. */
export {
  NODE_PTY_INSTALL_HINT,
  PtyClosedError,
  PtyProducerDisposedError,
  PtyUnavailableError,
} from './errors.js';
export { encodeInput, encodeKey, isPtyKeyName, PTY_KEY_NAMES, type PtyKeyName } from './keys.js';
export {
  MAX_SCREEN_BYTES,
  PTY_PRODUCER_DEFAULTS,
  type PtyProducerOptions,
  ptyProducerOptions,
  type ResolvedPtyProducerOptions,
} from './options.js';
export { type PtyFacts, ptyFacts } from './pty-facts.js';
export { outcomeOf as ptyOutcomeOf } from './pty-outcome.js';
export {
  PTY_TAG_VARIABLE,
  type PtyExit,
  type PtyExitReason,
  type PtyProcess,
  type PtyStopReason,
} from './pty-process.js';
export {
  createPtyProducer,
  PTY_TASK_KIND,
  type PtyInput,
  type PtyProducer,
  type PtyScreenSnapshot,
  type PtyStarted,
  type PtyStartRequest,
} from './pty-producer.js';
export { isPtyAvailable, type PtyModuleLoader } from './pty-runtime.js';
export {
  createPtyResizeTool,
  createPtyStartTool,
  createPtyTools,
  createPtyWriteTool,
  type PtyForegroundValue,
  type PtyResizeInput,
  type PtyScreenValue,
  type PtyStartInput,
  type PtyStartValue,
  type PtyToolsOptions,
  type PtyWriteInput,
} from './pty-tools.js';
export { type QuietWaitOptions, type ScreenWaitOptions, waitForQuiet, waitForScreen } from './screen-wait.js';
export { ALTERNATE_SCREEN_HEADER, type ScreenDelta, type ScreenView } from './terminal-screen.js';
