/**
 * Tracing: Errand's small port over OpenTelemetry (an optional peer dependency), the W3C traceparent a
 * task's trace context is stored as, and the span of a task's lifetime. It knows no session, store or
 * surface: it sits above the contract (`tasks/`) only.
 */
export {
  defaultTracing,
  type OpenTelemetryApi,
  type OpenTelemetryTracer,
  type OpenTelemetryTracingOptions,
  openTelemetryTracing,
  resolveTracing,
  TRACER_NAME,
  tracingOption,
} from './open-telemetry.js';
export { TaskTrace, type TaskTraceStart } from './task-trace.js';
export { formatTraceparent, isTraceparent, parseTraceparent, type TraceIds } from './traceparent.js';
export {
  isTracing,
  NOOP_TRACING,
  type SpanAttributes,
  type SpanLink,
  type SpanParent,
  type StartSpanOptions,
  type TraceContext,
  type Tracing,
  type TracingSetting,
  type TracingSpan,
} from './tracing.js';
