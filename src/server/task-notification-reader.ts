/**
 * Reads the `<task-notification>` envelopes in a delivered message back into facts a viewer shows on the
 * card of the tool call that started the task: task id, tool-use id, status, summary and exit code. The
 * envelope escapes its text, so only Errand's own elements are found: an output that contains a fake
 * envelope stays inside an escaped element.
 */

export interface ParsedNotification {
  readonly taskId: string;
  /** The tool call that started the task, when the envelope names it. */
  readonly toolUseId: string | null;
  /** `completed`, `failed`, `killed`, `lost`, ... as the envelope says. */
  readonly status: string;
  readonly summary: string | null;
  readonly exitCode: number | null;
}

/** Envelopes read from one message at most: a batch is bounded by the delivery budget anyway. */
export const MAX_NOTIFICATIONS_PER_MESSAGE = 64;

const ENVELOPE = /<task-notification>\n([\s\S]*?)\n<\/task-notification>/g;

function unescapeXml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#(\d+));/g, (_match, name: string, code: string | undefined) => {
    if (code !== undefined) return String.fromCodePoint(Number(code));
    return name === 'amp' ? '&' : name === 'lt' ? '<' : name === 'gt' ? '>' : '"';
  });
}

/** The text of a one-line element `<name>...</name>` at the top of an envelope body (any indent). */
function element(body: string, name: string): string | undefined {
  const match = new RegExp(`^[ \\t]*<${name}>([^<\\n]*)</${name}>$`, 'm').exec(body);
  return match?.[1] === undefined ? undefined : unescapeXml(match[1]);
}

/** The envelopes in `text`, in order (at most `MAX_NOTIFICATIONS_PER_MESSAGE`). */
export function readTaskNotifications(text: string): ParsedNotification[] {
  const found: ParsedNotification[] = [];
  for (const match of text.matchAll(ENVELOPE)) {
    if (found.length >= MAX_NOTIFICATIONS_PER_MESSAGE) break;
    const body = match[1] ?? '';
    const taskId = element(body, 'task-id');
    const status = element(body, 'status');
    if (taskId === undefined || status === undefined) continue;
    const exitCode = element(body, 'exit-code');
    const parsedExit = exitCode !== undefined && /^-?\d{1,10}$/.test(exitCode) ? Number(exitCode) : null;
    const toolUseId = element(body, 'tool-use-id');
    found.push({
      taskId,
      toolUseId: toolUseId === undefined || toolUseId === '' ? null : toolUseId,
      status,
      summary: element(body, 'summary') ?? null,
      exitCode: parsedExit,
    });
  }
  return found;
}
