/**
 * The `<task-notification>` envelope and its byte budget. Fields are rendered as escaped elements; the
 * stable fields (the task id and how to collect it) are never cut, the variable ones are shrunk or
 * dropped in their cut order until the text fits, and a note says that something was cut — a note that
 * is itself the last variable part to go.
 */
import { escapeXmlText, truncateUtf8Head, truncateUtf8Tail, utf8ByteLength } from '../text/index.js';

export const NOTIFICATION_TAG = 'task-notification';

export interface EnvelopeField {
  /** The element name, for example `status`. */
  readonly name: string;
  /** The raw (unescaped) content. */
  readonly text: string;
  /** Lower numbers are cut first. Absent: a stable field, never cut. */
  readonly cutOrder?: number;
  /** How the field shrinks before it is dropped: keep its head or its tail. Absent: dropped whole. */
  readonly shrink?: 'head' | 'tail';
  /** A shorter rendering tried before the field is dropped (a summary without the label). */
  readonly fallback?: string;
  /** Renders the content on its own lines between the tags. */
  readonly block?: boolean;
}

export interface RenderEnvelopeOptions {
  /** Prefix of every element line: '' for the flat forms, two spaces for the generic indented form. */
  readonly indent?: string;
  /** The most UTF-8 bytes the whole text may take. A budget below the stable part yields the stable part. */
  readonly budgetBytes?: number;
}

/** The note added when a budget cut something. */
export const CUT_NOTE_FIELD = 'truncated';
const CUT_NOTE_TEXT = 'Some fields were cut to fit the size limit.';

interface FieldState {
  readonly field: EnvelopeField;
  text: string;
  dropped: boolean;
}

function renderField(name: string, text: string, block: boolean, indent: string): string {
  const escaped = escapeXmlText(text);
  if (!block) return `${indent}<${name}>${escaped}</${name}>`;
  const body = indent === '' ? escaped : escaped.replace(/^/gm, indent.repeat(2));
  return `${indent}<${name}>\n${body}\n${indent}</${name}>`;
}

function renderAll(states: readonly FieldState[], indent: string): string {
  const lines = [`<${NOTIFICATION_TAG}>`];
  for (const state of states) {
    if (!state.dropped)
      lines.push(renderField(state.field.name, state.text, state.field.block === true, indent));
  }
  lines.push(`</${NOTIFICATION_TAG}>`);
  return lines.join('\n');
}

/** Renders the envelope, cutting variable fields until it fits `budgetBytes`. */
export function renderEnvelope(
  fields: readonly EnvelopeField[],
  options: RenderEnvelopeOptions = {},
): string {
  const indent = options.indent ?? '';
  const budget = options.budgetBytes ?? Number.POSITIVE_INFINITY;
  const states: FieldState[] = fields
    .filter((field) => field.text !== '')
    .map((field) => ({ field, text: field.text, dropped: false }));
  const full = renderAll(states, indent);
  if (utf8ByteLength(full) <= budget) return full;

  // Something is cut: a note says so, right after the last variable field (before the collect line).
  const note: FieldState = {
    field: { name: CUT_NOTE_FIELD, text: CUT_NOTE_TEXT, cutOrder: Number.MAX_SAFE_INTEGER },
    text: CUT_NOTE_TEXT,
    dropped: false,
  };
  const lastVariable = states.findLastIndex((state) => state.field.cutOrder !== undefined);
  states.splice(lastVariable + 1, 0, note);

  const order = states
    .filter((state) => state.field.cutOrder !== undefined)
    .sort((left, right) => (left.field.cutOrder ?? 0) - (right.field.cutOrder ?? 0));
  // First pass: shrink, or fall back to a shorter rendering, or drop — in cut order.
  const overflowOf = () => utf8ByteLength(renderAll(states, indent)) - budget;
  for (const state of order) {
    const overflow = overflowOf();
    if (overflow <= 0) break;
    if (state.field.shrink) {
      if (!shrinkField(state, overflow, indent)) state.dropped = true;
    } else if (state.field.fallback !== undefined && state.field.fallback.length < state.text.length) {
      state.text = state.field.fallback;
    } else {
      state.dropped = true;
    }
  }
  // Second pass: fields that only fell back go too, in the same order, until it fits.
  for (const state of order) {
    if (overflowOf() <= 0) break;
    state.dropped = true;
  }
  return renderAll(states, indent);
}

function rendered(state: FieldState, indent: string): number {
  return utf8ByteLength(renderField(state.field.name, state.text, state.field.block === true, indent));
}

/** Shrinks the field by at least `overflow` bytes; false when nothing useful would be left. */
function shrinkField(state: FieldState, overflow: number, indent: string): boolean {
  const current = rendered(state, indent);
  const allowed = current - overflow;
  const emptyBytes = utf8ByteLength(renderField(state.field.name, '', state.field.block === true, indent));
  const ellipsis = '…';
  let contentBudget = allowed - emptyBytes - utf8ByteLength(ellipsis);
  while (contentBudget > 0) {
    const kept =
      state.field.shrink === 'head'
        ? `${truncateUtf8Head(state.text, contentBudget)}${ellipsis}`
        : `${ellipsis}${truncateUtf8Tail(state.text, contentBudget)}`;
    const size = utf8ByteLength(renderField(state.field.name, kept, state.field.block === true, indent));
    if (size <= allowed) {
      if (kept === ellipsis) return false;
      state.text = kept;
      return true;
    }
    // Escaping made it longer than its raw length: try again with the excess removed.
    contentBudget -= size - allowed;
  }
  return false;
}
