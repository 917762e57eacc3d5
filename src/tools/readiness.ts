/**
 * Readiness in one call: wait until a running task's output has a line matching a pattern, a TCP port
 * accepts a connection, or a URL answers with a wanted status — or until the task ends, or the wait's
 * bound passes. `task_output`'s `wait_for` and the bash tool's `ready_when` are this one wait. The model
 * gets the moment of readiness (the matching line, the address) instead of polling with `sleep; curl`.
 *
 * Ports and URLs are probed from the runtime's process, not from inside the command's sandbox, so by
 * default only loopback hosts may be probed: a confined command's network view does not widen through it.
 */
import { connect } from 'node:net';
import { z } from 'zod';
import { compileMonitorPattern } from '../notifications/index.js';
import {
  type Caller,
  type Clock,
  ErrandError,
  isTerminalStatus,
  type OutputCursor,
  type TaskService,
  type TaskSnapshot,
} from '../tasks/index.js';
import { stripTerminalEscapes } from '../text/index.js';

/** What a wait for readiness waits for: exactly one of `pattern`, `port`, `url`. */
export interface ReadinessInput {
  /** `ready_when` only: the wait's bound. */
  readonly timeout_ms?: number | undefined;
  /** A JavaScript regular expression an output line must match (monitor-safe: no backreferences, ...). */
  readonly pattern?: string | undefined;
  readonly ignore_case?: boolean | undefined;
  /** A TCP port that must accept a connection. */
  readonly port?: number | undefined;
  /** The host of `port`. Default 127.0.0.1. */
  readonly host?: string | undefined;
  /** An http(s) URL that must answer with `status` (default: any 2xx). */
  readonly url?: string | undefined;
  readonly status?: number | undefined;
}

/** The readiness limits a tool applies. */
export interface ReadinessLimits {
  /** How often a port or URL is probed, ms. */
  readonly pollMs: number;
  /** Which hosts a port or URL wait may probe: loopback only (default) or any. */
  readonly hosts: 'loopback' | 'any';
  /** Characters of a line matched and shown. */
  readonly maxLineChars: number;
  /** Characters of a pattern. */
  readonly maxPatternChars: number;
  /** Bytes of output one cursor read takes. */
  readonly readBytes: number;
}

export const READINESS_DEFAULTS: ReadinessLimits = Object.freeze({
  pollMs: 25,
  hosts: 'loopback' as const,
  maxLineChars: 1024,
  maxPatternChars: 256,
  readBytes: 65_536,
});

export type ReadinessResult =
  | { readonly outcome: 'ready'; readonly what: string; readonly afterMs: number }
  | { readonly outcome: 'ended'; readonly snapshot: TaskSnapshot; readonly seen: string }
  | { readonly outcome: 'timeout'; readonly afterMs: number; readonly seen: string }
  | { readonly outcome: 'aborted'; readonly seen: string };

export class InvalidReadinessError extends ErrandError {
  constructor(field: string, expected: string, value: unknown) {
    super(
      'INVALID_READINESS',
      'caller',
      `Expected \`${field}\` to be ${expected}, got ${JSON.stringify(value)?.slice(0, 200) ?? String(value)}`,
      { context: { field, value } },
    );
  }
}

/** The schema of a readiness condition, for `wait_for` and (with its own `timeout_ms`) `ready_when`. */
export function readinessSchema(
  limits: ReadinessLimits,
  timeout?: { defaultMs: number; maxMs: number },
): z.ZodType<ReadinessInput> {
  const bound =
    timeout === undefined
      ? {}
      : {
          timeout_ms: z
            .number()
            .int()
            .positive()
            .max(timeout.maxMs)
            .optional()
            .describe(
              `How long to wait for readiness, in milliseconds (default ${timeout.defaultMs}, at most ${timeout.maxMs}). The command keeps running after it.`,
            ),
        };
  return z
    .strictObject({
      ...bound,
      pattern: z
        .string()
        .min(1)
        .max(limits.maxPatternChars)
        .optional()
        .describe('A JavaScript regular expression an output line must match, for example "listening on".'),
      ignore_case: z.boolean().optional().describe('Match the pattern regardless of case.'),
      port: z
        .number()
        .int()
        .min(1)
        .max(65_535)
        .optional()
        .describe('A TCP port that must accept a connection.'),
      host: z.string().min(1).max(253).optional().describe('The host of port. Default 127.0.0.1.'),
      url: z.string().min(1).max(2048).optional().describe('An http(s) URL that must answer with status.'),
      status: z
        .number()
        .int()
        .min(100)
        .max(599)
        .optional()
        .describe('The HTTP status url must answer with. Default: any 2xx.'),
    })
    .refine(
      (input) => [input.pattern, input.port, input.url].filter((value) => value !== undefined).length === 1,
      { message: 'give exactly one of pattern, port and url' },
    ) as unknown as z.ZodType<ReadinessInput>;
}

/** A condition checked and compiled before anything waits. */
export type ReadinessProbe =
  | { readonly kind: 'pattern'; readonly regexp: RegExp; readonly source: string }
  | { readonly kind: 'port'; readonly host: string; readonly port: number }
  | { readonly kind: 'url'; readonly url: URL; readonly status: number | undefined };

const LOOPBACK_NAMES = new Set(['localhost', 'ip6-localhost', 'ip6-loopback']);

function isLoopback(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (LOOPBACK_NAMES.has(bare.toLowerCase()) || bare.toLowerCase().endsWith('.localhost')) return true;
  if (bare === '::1') return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** Validates and compiles a condition; throws `INVALID_READINESS` / `INVALID_MONITOR_PATTERN` naming the field. */
export function compileReadiness(
  input: ReadinessInput,
  limits: ReadinessLimits,
  field: string,
): ReadinessProbe {
  if (input.pattern !== undefined) {
    const regexp = compileMonitorPattern(input.pattern, input.ignore_case === true, limits.maxPatternChars);
    return { kind: 'pattern', regexp, source: input.pattern };
  }
  if (input.port !== undefined) {
    const host = input.host ?? '127.0.0.1';
    if (limits.hosts === 'loopback' && !isLoopback(host)) {
      throw new InvalidReadinessError(`${field}.host`, 'a loopback host (localhost, 127.x.x.x, ::1)', host);
    }
    return { kind: 'port', host, port: input.port };
  }
  if (input.url !== undefined) {
    let url: URL;
    try {
      url = new URL(input.url);
    } catch {
      throw new InvalidReadinessError(`${field}.url`, 'an http or https URL', input.url);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new InvalidReadinessError(`${field}.url`, 'an http or https URL', input.url);
    }
    if (limits.hosts === 'loopback' && !isLoopback(url.hostname)) {
      throw new InvalidReadinessError(
        `${field}.url`,
        'a URL on a loopback host (localhost, 127.x.x.x, ::1)',
        input.url,
      );
    }
    return { kind: 'url', url, status: input.status };
  }
  throw new InvalidReadinessError(field, 'one of pattern, port and url', input);
}

/** How the condition reads for the model. */
export function describeProbe(probe: ReadinessProbe): string {
  switch (probe.kind) {
    case 'pattern':
      return `an output line matching /${probe.source}/`;
    case 'port':
      return `${probe.host}:${probe.port} to accept connections`;
    case 'url':
      return `${probe.url.href} to answer ${probe.status ?? '2xx'}`;
  }
}

interface WaitReadyOptions {
  readonly tasks: TaskService;
  readonly taskId: string;
  readonly caller: Caller;
  readonly probe: ReadinessProbe;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly clock: Clock;
  readonly limits: ReadinessLimits;
}

/**
 * Waits for the condition, the task's end or `timeoutMs`, whichever comes first. The task's end wins only
 * when the condition was not met first. Never leaves a timer, socket or cursor behind.
 */
export async function waitForReadiness(options: WaitReadyOptions): Promise<ReadinessResult> {
  const { tasks, taskId, caller, probe, timeoutMs, clock } = options;
  const started = clock.now();
  const stop = new AbortController();
  const signal = AbortSignal.any([options.signal, stop.signal]);
  let seen = '';
  const onSeen = (text: string) => {
    seen = text;
  };
  let cancelDeadline: () => void = () => {};
  const deadline = new Promise<'timeout'>((resolve) => {
    cancelDeadline = clock.schedule(timeoutMs, () => resolve('timeout'));
  });
  let onCallAbort: () => void = () => {};
  const aborted = new Promise<'aborted'>((resolve) => {
    onCallAbort = () => resolve('aborted');
    if (options.signal.aborted) resolve('aborted');
    else options.signal.addEventListener('abort', onCallAbort, { once: true });
  });
  // The task's end: a wait on the service (it claims the end, which the answer then shows).
  const ended = tasks
    .wait(taskId, timeoutMs + 1000, caller, signal)
    .then((snapshot) => (isTerminalStatus(snapshot.status) ? snapshot : undefined))
    .catch(() => undefined);
  const endedOnly = ended.then((snapshot) => snapshot ?? new Promise<never>(() => {}));
  const ready =
    probe.kind === 'pattern'
      ? watchOutput(options, probe.regexp, signal, onSeen)
      : pollUntil(
          options,
          signal,
          probe.kind === 'port'
            ? () => probePort(probe.host, probe.port, signal)
            : () => probeUrl(probe.url, probe.status, signal),
          onSeen,
        );
  const readyOnly = ready.then((line) => line ?? new Promise<never>(() => {}));
  try {
    const first = await Promise.race([readyOnly, endedOnly, deadline, aborted]);
    if (first === 'timeout') return { outcome: 'timeout', afterMs: clock.now() - started, seen };
    if (first === 'aborted') return { outcome: 'aborted', seen };
    if (typeof first === 'string') return { outcome: 'ready', what: first, afterMs: clock.now() - started };
    // The task ended. Its last output may still hold the line: a pattern reads the rest of the stream.
    if (probe.kind === 'pattern') {
      const last = await Promise.race([ready, deadline, aborted]);
      if (typeof last === 'string' && last !== 'timeout' && last !== 'aborted') {
        return { outcome: 'ready', what: last, afterMs: clock.now() - started };
      }
    }
    return { outcome: 'ended', snapshot: first, seen };
  } finally {
    stop.abort();
    cancelDeadline();
    options.signal.removeEventListener('abort', onCallAbort);
    await ready.catch(() => undefined);
    await ended;
  }
}

/** Reads the task's whole output from its start through a cursor of its own; resolves with the first matching line. */
async function watchOutput(
  options: WaitReadyOptions,
  regexp: RegExp,
  signal: AbortSignal,
  onSeen: (text: string) => void,
): Promise<string | undefined> {
  const { tasks, taskId, caller, limits } = options;
  let cursor: OutputCursor;
  try {
    cursor = await tasks.openCursor(taskId, caller, { from: 'start' });
  } catch (error) {
    if (signal.aborted) return undefined;
    throw error;
  }
  try {
    if (cursor.stream !== 'bytes') {
      throw new InvalidReadinessError('pattern', 'used on a task with an output stream (a command)', taskId);
    }
    let partial = '';
    let lastLine = '';
    const matches = (line: string): boolean => {
      const plain = stripTerminalEscapes(line).slice(0, limits.maxLineChars);
      if (plain.trim() !== '') lastLine = plain;
      return regexp.test(plain);
    };
    while (!signal.aborted) {
      let read: Awaited<ReturnType<OutputCursor['read']>>;
      try {
        read = await cursor.read({ maxBytes: limits.readBytes, waitMs: 1000, signal });
      } catch (error) {
        if (signal.aborted || ErrandError.hasCode(error, 'CURSOR_CLOSED')) return undefined;
        throw error;
      }
      const lines = (partial + read.text).split('\n');
      partial = lines.pop() ?? '';
      // A line longer than the bound is matched on its start; the rest of it is ignored.
      if (partial.length > limits.maxLineChars * 4) partial = partial.slice(0, limits.maxLineChars);
      for (const line of lines)
        if (matches(line)) return stripTerminalEscapes(line).slice(0, limits.maxLineChars);
      // A prompt without its newline yet ("Password: ") counts too.
      if (partial !== '' && matches(partial))
        return stripTerminalEscapes(partial).slice(0, limits.maxLineChars);
      onSeen(lastLine === '' ? 'no output yet' : `last line: ${JSON.stringify(lastLine)}`);
      if (read.ended) return undefined;
    }
    return undefined;
  } finally {
    cursor.close();
  }
}

/** Probes every `pollMs` until the probe answers a description of readiness. */
async function pollUntil(
  options: WaitReadyOptions,
  signal: AbortSignal,
  attempt: () => Promise<{ ready: string } | { seen: string }>,
  onSeen: (text: string) => void,
): Promise<string | undefined> {
  const { clock, limits } = options;
  while (!signal.aborted) {
    const result = await attempt();
    if ('ready' in result) return result.ready;
    onSeen(result.seen);
    await new Promise<void>((resolve) => {
      const onAbort = () => {
        cancel();
        resolve();
      };
      const cancel = clock.schedule(limits.pollMs, () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
  return undefined;
}

function probePort(
  host: string,
  port: number,
  signal: AbortSignal,
): Promise<{ ready: string } | { seen: string }> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve({ seen: 'stopped' });
      return;
    }
    const socket = connect({ host, port });
    const finish = (result: { ready: string } | { seen: string }) => {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(result);
    };
    const onAbort = () => finish({ seen: 'stopped' });
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => finish({ ready: `${host}:${port} accepts connections` }));
    socket.once('error', (error: NodeJS.ErrnoException) =>
      finish({ seen: `${host}:${port}: ${error.code ?? error.message}` }),
    );
  });
}

async function probeUrl(
  url: URL,
  status: number | undefined,
  signal: AbortSignal,
): Promise<{ ready: string } | { seen: string }> {
  try {
    const response = await fetch(url, {
      signal: AbortSignal.any([signal, AbortSignal.timeout(5000)]),
      redirect: 'manual',
    });
    await response.body?.cancel().catch(() => undefined);
    const ok =
      status === undefined ? response.status >= 200 && response.status < 300 : response.status === status;
    if (ok) return { ready: `${url.href} answered ${response.status}` };
    return { seen: `${url.href} answered ${response.status}` };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return { seen: `${url.href}: ${cause ?? (error instanceof Error ? error.message : String(error))}` };
  }
}

/** The line an answer carries about readiness. */
export function formatReadiness(result: ReadinessResult, probe: ReadinessProbe): string {
  switch (result.outcome) {
    case 'ready':
      return probe.kind === 'pattern'
        ? `[ready after ${result.afterMs} ms: matched /${probe.source}/: ${JSON.stringify(result.what)}]`
        : `[ready after ${result.afterMs} ms: ${result.what}]`;
    case 'timeout':
      return `[not ready after ${result.afterMs} ms: waited for ${describeProbe(probe)}; ${result.seen || 'nothing seen yet'}; the task keeps running]`;
    case 'ended':
      return `[not ready: the task ended before ${describeProbe(probe)}${result.seen ? `; ${result.seen}` : ''}]`;
    case 'aborted':
      return `[the wait for ${describeProbe(probe)} was interrupted]`;
  }
}
