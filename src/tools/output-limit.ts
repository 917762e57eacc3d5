/**
 * The output limit of model-facing tool text. A trailing `[status: ...]` line is reserved and the tail of
 * the rest is kept (the newest output matters most); an error without a status line keeps its head (its
 * code and message come first). Cuts land on UTF-8 boundaries and are announced by one truncation marker.
 */
import { fitTail, formatTruncationMarker, truncateUtf8Head, utf8ByteLength } from '../text/index.js';

const STATUS_SUFFIX = /(?:^|\n)(\[status: [^\n]*\])$/;

export interface LimitToolTextOptions {
  /** Keep the head instead of the tail when there is no status line (errors). Default false. */
  readonly keepHead?: boolean;
  /** Named in the truncation marker when the text holds no producer marker naming a file. */
  readonly outputFile?: string;
}

/** Bounds `text` to `limitBytes` (undefined: unbounded). Idempotent: bounded text passes unchanged. */
export function limitToolText(
  text: string,
  limitBytes: number | undefined,
  options: LimitToolTextOptions = {},
): string {
  if (limitBytes === undefined || utf8ByteLength(text) <= limitBytes) return text;
  const status = STATUS_SUFFIX.exec(text);
  const fileOption = options.outputFile === undefined ? {} : { outputFile: options.outputFile };
  if (status) {
    const body = text.slice(0, status.index);
    return fitTail(body, limitBytes, { suffix: status[1] as string, ...fileOption });
  }
  if (!options.keepHead) return fitTail(text, limitBytes, fileOption);
  return fitHead(text, limitBytes);
}

/** Keeps the head of `text` and ends it with a marker counting what was cut. */
function fitHead(text: string, limitBytes: number): string {
  const total = utf8ByteLength(text);
  const marker = formatTruncationMarker({ skippedBytes: total });
  const room = limitBytes - utf8ByteLength(marker) - 1;
  if (room <= 0) return truncateUtf8Head(text, limitBytes);
  const kept = truncateUtf8Head(text, room);
  return `${kept}\n${formatTruncationMarker({ skippedBytes: total - utf8ByteLength(kept) })}`;
}

/** Bounds a tool result's text; errors without a status line keep their head. */
export function limitToolResult<Result extends { readonly text: string; readonly isError: boolean }>(
  result: Result,
  limitBytes: number | undefined,
): Result {
  const text = limitToolText(result.text, limitBytes, { keepHead: result.isError });
  return text === result.text ? result : { ...result, text };
}
