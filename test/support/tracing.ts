/**
 * The OpenTelemetry SDK for tests: an AsyncLocalStorage context manager registered globally (context
 * propagation is global in OpenTelemetry), a tracer provider that exports every ended span to an
 * `InMemorySpanExporter`, and Errand's `Tracing` over it. `close()` unregisters the context manager.
 */
import * as api from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { openTelemetryTracing, type Tracing } from '../../src/tracing/index.js';

export interface TestTracing {
  readonly tracing: Tracing;
  readonly exporter: InMemorySpanExporter;
  readonly provider: BasicTracerProvider;
  /** Ended spans, oldest first; with `name`, only those named so. */
  spans(name?: string): ReadableSpan[];
  /** The one ended span named `name` (throws unless there is exactly one). */
  only(name: string): ReadableSpan;
  close(): Promise<void>;
}

export function startTestTracing(): TestTracing {
  const manager = new AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(manager);
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracing = openTelemetryTracing({ api, tracer: provider.getTracer('errand-test') });
  const spans = (name?: string) =>
    exporter.getFinishedSpans().filter((span) => name === undefined || span.name === name);
  return {
    tracing,
    exporter,
    provider,
    spans,
    only(name) {
      const found = spans(name);
      if (found.length !== 1) {
        throw new Error(
          `expected one span named ${name}, got ${found.length}: ${spans()
            .map((span) => span.name)
            .join(', ')}`,
        );
      }
      return found[0]!;
    },
    async close() {
      await provider.shutdown();
      api.context.disable();
    },
  };
}

/** The parent span id of an ended span (SDK 2.x keeps it in `parentSpanContext`). */
export function parentSpanId(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
