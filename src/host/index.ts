/** A complete Errand runtime assembled from its parts. */
export {
  createErrandRuntime,
  ERRAND_RUNTIME_DEFAULTS,
  ERRAND_RUNTIME_OPTION_KEYS,
  type ErrandRuntime,
  type ErrandRuntimeOptions,
  rejectUnknownRuntimeOptions,
} from './errand-runtime.js';
