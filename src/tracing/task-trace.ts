/**
 * The span of one task's lifetime, from its start to its settlement: started in the context active when
 * the task starts (the `execute_tool` span of the call that started it), or under a stored traceparent
 * (a resumed or re-attached task), linked to the previous attempt's span on a resume. The producer's
 * `run()` runs with it active, so what the producer does later (a subagent's turns) is its child. State
 * changes are span events; the end carries the exit facts (pid, exit code, status, bytes).
 */
import type { TaskChangeReason, TaskSnapshot } from '../tasks/index.js';
import type { Tracing, TracingSpan } from './tracing.js';

export interface TaskTraceStart {
  readonly taskId: string;
  readonly kind: string;
  readonly label: string;
  readonly attempt: number;
  readonly sessionId: string | undefined;
  /** The tool call that started it (`detail.toolUseId`). */
  readonly toolCallId: string | undefined;
  /** A stored parent (the spec's `traceparent`): the task continues that trace. */
  readonly parent: string | undefined;
  /** The previous attempt's span, on a resume: linked, not parented. */
  readonly previous: string | undefined;
}

const MAX_LABEL_CHARACTERS = 200;

export class TaskTrace {
  readonly #tracing: Tracing;
  readonly #span: TracingSpan;
  #pidSeen = false;
  #ended = false;

  private constructor(tracing: Tracing, span: TracingSpan) {
    this.#tracing = tracing;
    this.#span = span;
  }

  /** Starts the task's span; undefined when tracing is off (the task then carries no trace at all). */
  static start(tracing: Tracing, start: TaskTraceStart): TaskTrace | undefined {
    if (!tracing.enabled) return undefined;
    // What the check after the start would find, without building the span: no SDK and no active span.
    if (start.parent === undefined && tracing.idle?.() === true) return undefined;
    const span = tracing.startSpan(`task ${start.kind}`, {
      parent: start.parent === undefined ? 'active' : { traceparent: start.parent },
      attributes: {
        'errand.task.id': start.taskId,
        'errand.task.kind': start.kind,
        'errand.task.label': start.label.slice(0, MAX_LABEL_CHARACTERS),
        'errand.task.attempt': start.attempt,
        'gen_ai.conversation.id': start.sessionId,
        'gen_ai.tool.call.id': start.toolCallId,
      },
      ...(start.previous === undefined
        ? {}
        : { links: [{ traceparent: start.previous, attributes: { 'errand.link': 'previous_attempt' } }] }),
    });
    // Nobody records it and it names no trace (the API without an SDK): nothing to keep or to run in.
    if (!span.recording && span.traceparent === undefined) {
      span.end();
      return undefined;
    }
    return new TaskTrace(tracing, span);
  }

  /** This span's traceparent (stored with the task); undefined when nobody records it. */
  get traceparent(): string | undefined {
    return this.#span.traceparent;
  }

  /** Runs the producer's start with the task's span active. */
  run<T>(fn: () => T): T {
    return this.#tracing.withSpan(this.#span, fn);
  }

  /** The task never started (its `run()` threw): the span ends as an error. */
  abandon(error: unknown): void {
    this.#span.setError(error instanceof Error ? error.message : String(error), 'start_failed');
    this.#end();
  }

  /** A change of the task: an event, and at settlement the exit facts and the span's end. */
  change(reason: TaskChangeReason, task: TaskSnapshot): void {
    if (this.#ended) return;
    switch (reason) {
      case 'updated':
        if (!this.#pidSeen && typeof task.detail.pid === 'number') {
          this.#pidSeen = true;
          this.#span.setAttributes({ 'process.pid': task.detail.pid });
        }
        return;
      case 'backgrounded':
        this.#span.addEvent('errand.task.backgrounded');
        return;
      case 'stopping':
        this.#span.addEvent('errand.task.stopping', {
          'errand.task.stop_initiator': task.stopInitiator,
        });
        return;
      case 'settled':
        this.#settle(task);
        return;
      case 'removed':
        this.#end();
        return;
      default:
        return;
    }
  }

  #settle(task: TaskSnapshot): void {
    const detail = task.detail;
    const number = (value: unknown) => (typeof value === 'number' ? value : undefined);
    const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
    const sandbox = detail.sandbox as { profile?: unknown } | undefined;
    this.#span.addEvent('errand.task.settled', { 'errand.task.status': task.status });
    this.#span.setAttributes({
      'errand.task.status': task.status,
      'errand.task.reason': text(detail.reason),
      'errand.task.output_bytes': number(detail.outputBytes),
      'errand.task.backgrounded': task.isBackgrounded,
      'errand.task.stop_initiator': task.stopInitiator,
      'errand.sandbox.profile': text(sandbox?.profile),
      'process.pid': number(detail.pid),
      'process.exit.code': number(detail.exitCode),
      'process.exit.signal': text(detail.signal),
    });
    if (task.status === 'failed' || task.status === 'lost') {
      this.#span.setError(task.error ?? `the task ${task.status}`, task.status);
    }
    this.#end();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#span.end();
  }
}
