/** A complete Errand runtime assembled from its parts. */
export {
  createErrandRuntime,
  ERRAND_RUNTIME_DEFAULTS,
  type ErrandRuntime,
  type ErrandRuntimeOptions,
  errandRuntimeOptions,
} from './errand-runtime.js';
