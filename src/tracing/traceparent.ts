/**
 * W3C `traceparent` values (`00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`): the one form a task's
 * trace context is stored in (task records, later Redis jobs), so it survives a restart and a resume.
 */

/** A span's identity, as much of an OpenTelemetry `SpanContext` as a traceparent carries. */
export interface TraceIds {
  readonly traceId: string;
  readonly spanId: string;
  /** 1 when sampled. */
  readonly traceFlags: number;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** The ids a traceparent names, or undefined when it is not a valid version-00 traceparent. */
export function parseTraceparent(value: unknown): TraceIds | undefined {
  if (typeof value !== 'string') return undefined;
  const match = TRACEPARENT.exec(value);
  if (match === null) return undefined;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) };
}

/** Whether `value` is a valid version-00 traceparent. */
export function isTraceparent(value: unknown): value is string {
  return parseTraceparent(value) !== undefined;
}

/** The traceparent of a span context; undefined for an invalid one (a span that records nothing). */
export function formatTraceparent(ids: TraceIds): string | undefined {
  const value = `00-${ids.traceId}-${ids.spanId}-${(ids.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
  return isTraceparent(value) ? value : undefined;
}
