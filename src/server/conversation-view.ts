/**
 * A session's conversation as the dashboard shows it: each stored message cut to a bounded size, its tool
 * calls as cards (name and a one-line summary of the input), its tool results by call id, and the task
 * notifications it delivered read back, so a card can show how its background task ended.
 */
import type { JsonValue, MessageRecord } from '../store/index.js';
import { shortenText, toSingleLine, truncateUtf8Head } from '../text/index.js';
import { type ParsedNotification, readTaskNotifications } from './task-notification-reader.js';

export interface ConversationLimits {
  /** Bytes of a message's text shown (the head). */
  readonly maxTextBytes: number;
  /** Bytes of a tool result shown (the head). */
  readonly maxResultBytes: number;
}

export interface ToolCallView {
  readonly id: string;
  readonly name: string;
  /** One line: a bash command, a subagent's description, else the input as JSON; shortened. */
  readonly summary: string;
  /** What the call says it does (`description`), when it says so and the summary is something else. */
  readonly description: string | null;
}

export interface ToolResultView {
  readonly toolCallId: string;
  readonly isError: boolean;
  readonly text: string;
  readonly truncated: boolean;
}

export interface ConversationMessageView {
  readonly seq: number;
  readonly role: MessageRecord['role'];
  readonly source: string;
  /** `model-only`: background results and other text the model sees but a person did not write. */
  readonly visibility: MessageRecord['visibility'];
  readonly createdAt: number;
  readonly text: string | null;
  /** The text was cut to `maxTextBytes`. */
  readonly truncated: boolean;
  readonly toolCalls: readonly ToolCallView[];
  readonly toolResults: readonly ToolResultView[];
  /** Task notifications this message delivered to the model. */
  readonly notifications: readonly ParsedNotification[];
}

/** Characters of a tool call's one-line summary. */
const SUMMARY_MAX_CHARS = 200;

function stringField(input: JsonValue, name: string): string | undefined {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return undefined;
  const value = (input as Record<string, JsonValue>)[name];
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

/** What a person reads on a card: the command a shell call runs, else what the call says it does. */
export function summarizeToolInput(input: JsonValue): string {
  const text =
    stringField(input, 'command') ??
    stringField(input, 'description') ??
    stringField(input, 'prompt') ??
    (input === null ? '' : JSON.stringify(input));
  return shortenText(toSingleLine(text), SUMMARY_MAX_CHARS);
}

/** The head of `text` within `maxBytes`, and whether anything was cut. */
function headOf(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const head = truncateUtf8Head(text, maxBytes);
  return { text: head, truncated: head.length < text.length };
}

function outputText(output: JsonValue): string {
  return typeof output === 'string' ? output : JSON.stringify(output);
}

export function toConversationMessage(
  message: MessageRecord,
  limits: ConversationLimits,
): ConversationMessageView {
  const { content } = message;
  const text = content.text === undefined ? undefined : headOf(content.text, limits.maxTextBytes);
  return {
    seq: message.seq,
    role: message.role,
    source: message.source,
    visibility: message.visibility,
    createdAt: message.createdAt,
    text: text?.text ?? null,
    truncated: text?.truncated ?? false,
    toolCalls: (content.toolCalls ?? []).map((call) => {
      const summary = summarizeToolInput(call.input);
      const description = stringField(call.input, 'description');
      const shown =
        description === undefined ? null : shortenText(toSingleLine(description), SUMMARY_MAX_CHARS);
      return { id: call.id, name: call.name, summary, description: shown === summary ? null : shown };
    }),
    toolResults: (content.toolResults ?? []).map((result) => {
      const shown = headOf(outputText(result.output), limits.maxResultBytes);
      return {
        toolCallId: result.toolCallId,
        isError: result.isError === true,
        text: shown.text,
        truncated: shown.truncated,
      };
    }),
    // Read from the whole text, not the shown head: a batch's later envelopes count too.
    notifications: content.text === undefined ? [] : readTaskNotifications(content.text),
  };
}
