/**
 * Reads a streamed chat completion (`stream: true`): server-sent events whose `data:` is a chunk with a
 * `delta` — pieces of text, and tool calls assembled by index from their id, name and argument pieces —
 * until `data: [DONE]` or the end of the body. Each piece of text is handed to `onTextDelta` as it
 * arrives; the whole reply is returned at the end, as a non-streamed one would be.
 */

/** One event's data, at most: a longer line means the stream is not what it claims to be. */
export const MAX_STREAM_EVENT_BYTES = 1024 * 1024;

export interface StreamedToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface StreamedCompletion {
  readonly text: string;
  readonly toolCalls: readonly StreamedToolCall[];
  readonly finishReason: string | undefined;
  readonly usage: { readonly prompt_tokens?: number; readonly completion_tokens?: number } | undefined;
}

interface ChunkDelta {
  readonly content?: string | null;
  readonly tool_calls?: ReadonlyArray<{
    readonly index?: number;
    readonly id?: string;
    readonly function?: { readonly name?: string; readonly arguments?: string };
  }>;
}

interface Chunk {
  readonly choices?: ReadonlyArray<{ readonly delta?: ChunkDelta; readonly finish_reason?: string | null }>;
  readonly usage?: { readonly prompt_tokens?: number; readonly completion_tokens?: number } | null;
  readonly error?: { readonly message?: string } | string;
}

/** Thrown for a stream that breaks its format or reports an error; the caller wraps it. */
export class StreamFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StreamFormatError';
  }
}

export async function readChatCompletionStream(
  body: ReadableStream<Uint8Array>,
  onTextDelta: ((text: string) => void) | undefined,
): Promise<StreamedCompletion> {
  const decoder = new TextDecoder();
  let text = '';
  const calls = new Map<number, StreamedToolCall>();
  let finishReason: string | undefined;
  let usage: StreamedCompletion['usage'];
  let buffered = '';
  let done = false;

  const handleEvent = (event: string) => {
    const data = event
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data === '') return;
    if (data === '[DONE]') {
      done = true;
      return;
    }
    let chunk: Chunk;
    try {
      chunk = JSON.parse(data) as Chunk;
    } catch {
      throw new StreamFormatError(`a streamed chunk is not JSON: ${data.slice(0, 200)}`);
    }
    if (chunk.error !== undefined) {
      const message =
        typeof chunk.error === 'string' ? chunk.error : (chunk.error.message ?? 'unknown error');
      throw new StreamFormatError(`the stream reported an error: ${message}`);
    }
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (choice === undefined) return;
    if (choice.finish_reason) finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (typeof delta?.content === 'string' && delta.content !== '') {
      text += delta.content;
      try {
        onTextDelta?.(delta.content);
      } catch {
        // A viewer's failure does not end the reply.
      }
    }
    for (const piece of delta?.tool_calls ?? []) {
      const index = piece.index ?? calls.size;
      const call = calls.get(index) ?? { id: '', name: '', arguments: '' };
      if (piece.id) call.id = piece.id;
      if (piece.function?.name) call.name += piece.function.name;
      if (piece.function?.arguments) call.arguments += piece.function.arguments;
      calls.set(index, call);
    }
  };

  const reader = body.getReader();
  try {
    while (!done) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buffered += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let boundary = buffered.indexOf('\n\n');
      while (boundary >= 0 && !done) {
        handleEvent(buffered.slice(0, boundary));
        buffered = buffered.slice(boundary + 2);
        boundary = buffered.indexOf('\n\n');
      }
      if (buffered.length > MAX_STREAM_EVENT_BYTES) {
        throw new StreamFormatError(`a streamed event exceeds ${MAX_STREAM_EVENT_BYTES} bytes`);
      }
    }
    if (!done && buffered.trim() !== '') handleEvent(buffered);
  } finally {
    await reader.cancel().catch(() => {});
  }
  return {
    text,
    toolCalls: [...calls.entries()].sort(([left], [right]) => left - right).map(([, call]) => call),
    finishReason,
    usage,
  };
}
