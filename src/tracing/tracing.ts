/**
 * Errand's tracing port: the few span operations Errand needs, behind an interface of its own so that
 * `@opentelemetry/api` stays an optional peer dependency. Without it (or with `tracing: false`) every
 * call goes to `NOOP_TRACING`, which allocates nothing. With it, `openTelemetryTracing` creates spans
 * through the API — recorded by whatever SDK the application registered, or by none.
 */

/** Attribute values Errand sets; undefined entries are left out. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** A captured context: opaque, only good for parenting later spans (see `Tracing.capture`). */
export interface TraceContext {
  readonly __traceContext: unique symbol;
}

/**
 * Where a span's parent comes from: the context active now (`active`), none (`root`: a new trace), a
 * context captured earlier, or a stored traceparent (a remote parent).
 */
export type SpanParent = 'active' | 'root' | TraceContext | { readonly traceparent: string };

export interface SpanLink {
  /** The linked span, as a traceparent; an invalid one is left out. */
  readonly traceparent: string;
  readonly attributes?: SpanAttributes;
}

export interface StartSpanOptions {
  /** Default `active`. */
  readonly parent?: SpanParent;
  readonly attributes?: SpanAttributes;
  /** Spans this one continues without being their child (an async continuation). */
  readonly links?: readonly SpanLink[];
  /** Default `internal`. */
  readonly kind?: 'internal' | 'client' | 'server';
}

export interface TracingSpan {
  /** False for a span nobody records (no SDK, not sampled, or tracing off). */
  readonly recording: boolean;
  /** This span's traceparent; undefined when it has no valid context. */
  readonly traceparent: string | undefined;
  setAttributes(attributes: SpanAttributes): void;
  addEvent(name: string, attributes?: SpanAttributes): void;
  /** Marks the span failed: status ERROR with `message`, and `error.type`. */
  setError(message: string, type?: string): void;
  end(): void;
}

export interface Tracing {
  /** False for `NOOP_TRACING`: callers may skip building attributes. */
  readonly enabled: boolean;
  startSpan(name: string, options?: StartSpanOptions): TracingSpan;
  /** Runs `fn` with `span` active, so spans started inside (and async work it starts) are its children. */
  withSpan<T>(span: TracingSpan, fn: () => T): T;
  /** The context active now, to parent work that runs later elsewhere. */
  capture(): TraceContext;
  /** Runs `fn` with a captured context active. */
  withContext<T>(context: TraceContext, fn: () => T): T;
  /** The traceparent of the span active now, if any. */
  activeTraceparent(): string | undefined;
  /**
   * True when a span started now in the active context would record nothing and name no trace (nothing
   * is registered to record spans and no span is active), so a caller may skip starting it. Absent, or
   * false whenever it cannot tell: the span is started.
   */
  readonly idle?: () => boolean;
}

const NOOP_SPAN: TracingSpan = Object.freeze({
  recording: false,
  traceparent: undefined,
  setAttributes() {},
  addEvent() {},
  setError() {},
  end() {},
});

const NOOP_CONTEXT = Object.freeze({}) as TraceContext;

/** Tracing that does nothing and allocates nothing. */
export const NOOP_TRACING: Tracing = Object.freeze({
  enabled: false,
  startSpan: () => NOOP_SPAN,
  withSpan: <T>(_span: TracingSpan, fn: () => T) => fn(),
  capture: () => NOOP_CONTEXT,
  withContext: <T>(_context: TraceContext, fn: () => T) => fn(),
  activeTraceparent: () => undefined,
});

/** The `tracing` option: a `Tracing` (e.g. `openTelemetryTracing({ tracer })`), or false for none. */
export type TracingSetting = Tracing | false;

/** Whether `value` looks like a `Tracing` (for option validation). */
export function isTracing(value: unknown): value is Tracing {
  const candidate = value as Partial<Tracing> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.startSpan === 'function' &&
    typeof candidate.withSpan === 'function' &&
    typeof candidate.capture === 'function' &&
    typeof candidate.withContext === 'function'
  );
}
