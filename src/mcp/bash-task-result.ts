/**
 * What an MCP task backed by a background bash command reports: its MCP status, a status message, and
 * its result — the newest output (bounded, never consuming the model's read cursor) and the exit line
 * a foreground `bash` call ends with.
 */
import type { CallToolResult, TaskStatus as McpTaskStatus } from '@modelcontextprotocol/sdk/types.js';
import { exitLine } from '../producers/bash/bash-tool.js';
import type { ExitFacts } from '../producers/bash/exit-facts.js';
import type { OutputSnapshot } from '../producers/bash/process-handle.js';
import { withSkippedOutputMarker } from '../producers/bash/skipped-output-marker.js';
import { isTerminalStatus, type TaskSnapshot } from '../tasks/index.js';
import { readFileTail } from '../text/index.js';
import { limitToolText } from '../tools/index.js';

/** The parts of a bash process handle a result needs (a seam: tests and other producers can supply it). */
export interface CommandOutput {
  snapshot(limitBytes?: number): OutputSnapshot;
  readonly exit: ExitFacts | undefined;
}

/** Reasons a command ran to its own end, or to a limit the call set: a result, not a failure. */
const RESULT_REASONS = new Set([
  'completed',
  'timed_out',
  'output_limit',
  'memory_limit',
  'cpu_limit',
  'pids_limit',
]);

/**
 * The MCP status of an Errand task. A command that ran to its end is `completed` whatever its exit code
 * (the exit code is in the result, as for a foreground call); a stopped one is `cancelled`; one that
 * could not start or was lost is `failed`.
 */
export function mcpTaskStatusOf(snapshot: TaskSnapshot, cancelRequested: boolean): McpTaskStatus {
  if (!isTerminalStatus(snapshot.status)) return cancelRequested ? 'cancelled' : 'working';
  const reason = typeof snapshot.detail.reason === 'string' ? snapshot.detail.reason : undefined;
  if (snapshot.status === 'killed' && (cancelRequested || reason === 'cancelled')) return 'cancelled';
  if (snapshot.status === 'completed' || (reason !== undefined && RESULT_REASONS.has(reason))) {
    return 'completed';
  }
  return snapshot.status === 'killed' ? 'cancelled' : 'failed';
}

/** One line for `statusMessage`: `bash-3 running (pid 4242)`, `bash-3 failed (exit code 1)`, `bash-3 killed: …`. */
export function describeTaskStatus(snapshot: TaskSnapshot): string {
  const pid = typeof snapshot.detail.pid === 'number' ? ` (pid ${snapshot.detail.pid})` : '';
  if (!isTerminalStatus(snapshot.status)) return `${snapshot.id} ${snapshot.status}${pid}`;
  const exitCode = snapshot.detail.exitCode;
  if (typeof exitCode === 'number') return `${snapshot.id} ${snapshot.status} (exit code ${exitCode})`;
  return snapshot.error
    ? `${snapshot.id} ${snapshot.status}: ${snapshot.error}`
    : `${snapshot.id} ${snapshot.status}`;
}

/** The result of a finished command, within `maxBytes` of output plus its exit line. */
export function renderBashTaskResult(
  snapshot: TaskSnapshot,
  output: CommandOutput | undefined,
  status: McpTaskStatus,
  maxBytes: number,
): CallToolResult {
  const lines: string[] = [];
  if (output) {
    const view = newestOutput(output, maxBytes);
    const body = withSkippedOutputMarker(view.text, view.skippedBytes, view.outputFile);
    lines.push(body === '' ? '(no output)' : body.replace(/\n$/, ''));
  } else {
    lines.push('(the output is no longer available)');
  }
  const facts = output?.exit;
  lines.push(facts ? exitLine(facts) : `[${describeTaskStatus(snapshot)}]`);
  lines.push(`[task: ${snapshot.id}; status: ${snapshot.status}]`);
  // The output part is already bounded; this bounds the whole text, exit lines included.
  const text = limitToolText(lines.join('\n'), maxBytes + 1024, { keepHead: false });
  return { content: [{ type: 'text', text }], isError: status === 'failed' };
}

/**
 * The newest `maxBytes` of a finished command's output. A handle's snapshot holds at most 8192 bytes; a
 * larger budget is filled from the output file, which holds the whole stream once the command stopped.
 */
function newestOutput(output: CommandOutput, maxBytes: number): OutputSnapshot {
  const view = output.snapshot(maxBytes);
  if (view.skippedBytes === 0 || view.outputFile === null) return view;
  if (Buffer.byteLength(view.text) >= maxBytes) return view;
  return completeFileTail(view.outputFile, maxBytes, view.outputBytes) ?? view;
}

/** The last `maxBytes` of a complete output file, starting on a character boundary; undefined if unreadable. */
function completeFileTail(file: string, maxBytes: number, outputBytes: number): OutputSnapshot | undefined {
  const tail = readFileTail(file, maxBytes);
  // A file that could not be written in full does not hold the newest output.
  if (tail === undefined || tail.totalBytes !== outputBytes) return undefined;
  return {
    text: tail.text,
    skippedBytes: tail.totalBytes - Buffer.byteLength(tail.text),
    outputBytes,
    outputFile: file,
    running: false,
  };
}
