/**
 * Tracing through `@opentelemetry/api`, an optional peer dependency. `defaultTracing()` loads it the
 * first time it is asked (one `require`, cached for the process); when it is not installed the answer
 * is `NOOP_TRACING` and nothing more is ever tried. The API's own globals decide the rest: spans go to the
 * tracer provider the application registered (none: they record nothing), context follows its context
 * manager. Only the structural part of the API used here is typed, so Errand's types never name the
 * package.
 */
import { createRequire } from 'node:module';
import { option } from '../tasks/options.js';
import { formatTraceparent, parseTraceparent, type TraceIds } from './traceparent.js';
import type {
  SpanAttributes,
  SpanLink,
  SpanParent,
  StartSpanOptions,
  TraceContext,
  Tracing,
  TracingSpan,
} from './tracing.js';
import { isTracing, NOOP_TRACING, type TracingSetting } from './tracing.js';

/** The name Errand's tracer is registered under. */
export const TRACER_NAME = 'errand';

interface OtelSpanContext extends TraceIds {
  readonly isRemote?: boolean;
}

interface OtelSpan {
  spanContext(): OtelSpanContext;
  isRecording(): boolean;
  setAttributes(attributes: Record<string, string | number | boolean>): unknown;
  addEvent(name: string, attributes?: Record<string, string | number | boolean>): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

/** The part of an OpenTelemetry `Tracer` used here. */
export interface OpenTelemetryTracer {
  startSpan(
    name: string,
    options?: {
      kind?: number;
      attributes?: Record<string, string | number | boolean>;
      links?: { context: OtelSpanContext; attributes?: Record<string, string | number | boolean> }[];
      root?: boolean;
    },
    context?: unknown,
  ): OtelSpan;
}

/** The part of the `@opentelemetry/api` module used here. */
export interface OpenTelemetryApi {
  readonly trace: {
    getTracer(name: string, version?: string): OpenTelemetryTracer;
    setSpan(context: unknown, span: OtelSpan): unknown;
    getSpan(context: unknown): OtelSpan | undefined;
    setSpanContext(context: unknown, spanContext: OtelSpanContext): unknown;
    /** The global provider: until an SDK registers, a proxy with no tracer to delegate to. */
    getTracerProvider?(): object;
  };
  readonly context: {
    active(): unknown;
    with<T>(context: unknown, fn: () => T): T;
  };
  readonly ROOT_CONTEXT: unknown;
}

export interface OpenTelemetryTracingOptions {
  /** The API module. Default: `@opentelemetry/api`, loaded with `require` (a missing one throws). */
  readonly api?: OpenTelemetryApi;
  /** The tracer to record with. Default: the global provider's tracer named `errand`. */
  readonly tracer?: OpenTelemetryTracer;
}

const SPAN_KINDS = { internal: 0, server: 1, client: 2 } as const;
const STATUS_ERROR = 2;

/** Tracing over the OpenTelemetry API (see `OpenTelemetryTracingOptions` for the defaults). */
export function openTelemetryTracing(options: OpenTelemetryTracingOptions = {}): Tracing {
  const api = options.api ?? loadApi();
  if (api === undefined) {
    throw new Error('@opentelemetry/api is not installed: npm install @opentelemetry/api');
  }
  const tracer = options.tracer ?? api.trace.getTracer(TRACER_NAME);
  const parentOf = (parent: SpanParent | undefined): unknown => {
    if (parent === undefined || parent === 'active') return api.context.active();
    if (parent === 'root') return api.ROOT_CONTEXT;
    if (typeof parent === 'object' && 'traceparent' in parent) {
      const ids = parseTraceparent(parent.traceparent);
      return ids === undefined
        ? api.ROOT_CONTEXT
        : api.trace.setSpanContext(api.ROOT_CONTEXT, { ...ids, isRemote: true });
    }
    return (parent as { context?: unknown }).context ?? api.context.active();
  };
  // Only the global tracer can be seen to have nothing behind it; a registered provider stays registered.
  let registered = options.tracer !== undefined;
  const idle = (): boolean => {
    if (!registered) {
      const provider = api.trace.getTracerProvider?.() as
        | { getDelegateTracer?(name: string): unknown }
        | undefined;
      registered =
        typeof provider?.getDelegateTracer !== 'function' ||
        provider.getDelegateTracer(TRACER_NAME) !== undefined;
    }
    return !registered && api.trace.getSpan(api.context.active()) === undefined;
  };
  return Object.freeze({
    enabled: true,
    idle,
    startSpan(name: string, start: StartSpanOptions = {}): TracingSpan {
      const links = linksOf(start.links);
      const span = tracer.startSpan(
        name,
        {
          kind: SPAN_KINDS[start.kind ?? 'internal'],
          ...(start.attributes === undefined ? {} : { attributes: defined(start.attributes) }),
          ...(links.length === 0 ? {} : { links }),
        },
        parentOf(start.parent),
      );
      return new OtelTracingSpan(span);
    },
    withSpan<T>(span: TracingSpan, fn: () => T): T {
      if (!(span instanceof OtelTracingSpan)) return fn();
      return api.context.with(api.trace.setSpan(api.context.active(), span.span), fn);
    },
    capture(): TraceContext {
      return { context: api.context.active() } as unknown as TraceContext;
    },
    withContext<T>(captured: TraceContext, fn: () => T): T {
      const context = (captured as unknown as { context?: unknown }).context;
      return context === undefined ? fn() : api.context.with(context, fn);
    },
    activeTraceparent(): string | undefined {
      const span = api.trace.getSpan(api.context.active());
      return span === undefined ? undefined : formatTraceparent(span.spanContext());
    },
  });
}

const INVALID_TRACE_ID = '0'.repeat(32);

class OtelTracingSpan implements TracingSpan {
  readonly span: OtelSpan;
  #traceparent: string | undefined | null = null;

  constructor(span: OtelSpan) {
    this.span = span;
  }

  /** Formatted on first use; a span without a trace (the API's no-op tracer) answers at once. */
  get traceparent(): string | undefined {
    if (this.#traceparent === null) {
      const context = this.span.spanContext();
      this.#traceparent = context.traceId === INVALID_TRACE_ID ? undefined : formatTraceparent(context);
    }
    return this.#traceparent;
  }

  get recording(): boolean {
    return this.span.isRecording();
  }

  setAttributes(attributes: SpanAttributes): void {
    this.span.setAttributes(defined(attributes));
  }

  addEvent(name: string, attributes?: SpanAttributes): void {
    this.span.addEvent(name, attributes === undefined ? undefined : defined(attributes));
  }

  setError(message: string, type?: string): void {
    this.span.setStatus({ code: STATUS_ERROR, message });
    if (type !== undefined) this.span.setAttributes({ 'error.type': type });
  }

  end(): void {
    this.span.end();
  }
}

function linksOf(links: readonly SpanLink[] | undefined) {
  const result: { context: OtelSpanContext; attributes?: Record<string, string | number | boolean> }[] = [];
  for (const link of links ?? []) {
    const ids = parseTraceparent(link.traceparent);
    if (ids === undefined) continue;
    result.push({
      context: { ...ids, isRemote: true },
      ...(link.attributes === undefined ? {} : { attributes: defined(link.attributes) }),
    });
  }
  return result;
}

function defined(attributes: SpanAttributes): Record<string, string | number | boolean> {
  const result: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) result[key] = value;
  return result;
}

let loaded: { api: OpenTelemetryApi | undefined } | undefined;

/** `@opentelemetry/api` when it is installed, loaded once per process; undefined when it is not. */
function loadApi(): OpenTelemetryApi | undefined {
  if (loaded === undefined) {
    try {
      loaded = { api: createRequire(import.meta.url)('@opentelemetry/api') as OpenTelemetryApi };
    } catch {
      loaded = { api: undefined };
    }
  }
  return loaded.api;
}

let fallback: Tracing | undefined;

/**
 * What every part of Errand traces with unless given a `tracing` option: the global OpenTelemetry API
 * when `@opentelemetry/api` is installed, else `NOOP_TRACING`. Resolved once per process.
 */
export function defaultTracing(): Tracing {
  if (fallback === undefined) {
    const api = loadApi();
    fallback = api === undefined ? NOOP_TRACING : openTelemetryTracing({ api });
  }
  return fallback;
}

/** The tracing an option asks for: false → none, a `Tracing` → it, absent → `defaultTracing()`. */
export function resolveTracing(setting: Tracing | false | undefined): Tracing {
  if (setting === false) return NOOP_TRACING;
  return setting ?? defaultTracing();
}

/**
 * The `tracing` option of every part that traces: a `Tracing` (e.g. `openTelemetryTracing({ tracer })`)
 * or false for none, resolved to the `Tracing` used; absent, the global OpenTelemetry API when installed.
 */
export const tracingOption = () =>
  option.custom<TracingSetting, Tracing>(
    'a Tracing (see openTelemetryTracing) or false',
    (value) => value === false || isTracing(value),
    { convert: (value) => resolveTracing(value), fallback: () => defaultTracing() },
  );
