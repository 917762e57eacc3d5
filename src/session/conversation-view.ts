/**
 * A session's live conversation kept in memory and read from the store incrementally: each read asks
 * only for the messages after the last seq it holds, so a model request costs the same at 50k messages
 * as at 1k. Seqs are never reused and a rewind bumps the branch generation, so a generation other than
 * the one held means "read it all again" — the only case where the view starts over.
 */
import type { MessageRecord } from '../store/records.js';
import type { SessionStore } from '../store/session-store.js';
import type { SessionId } from '../tasks/index.js';
import type { ModelMessage } from './model-port.js';

/** Turns stored messages into the model's shapes, one after another; a tool result needs its call's name. */
export class ModelMessageBuilder {
  readonly messages: ModelMessage[] = [];
  readonly #toolNames = new Map<string, string>();

  append(record: MessageRecord): void {
    const content = record.content;
    switch (record.role) {
      case 'system':
        this.messages.push({ role: 'system', text: content.text ?? '' });
        break;
      case 'user':
        this.messages.push({
          role: 'user',
          text: content.text ?? '',
          modelOnly: record.visibility === 'model-only',
        });
        break;
      case 'assistant': {
        const toolCalls = (content.toolCalls ?? []).map((call) => {
          this.#toolNames.set(call.id, call.name);
          return { id: call.id, name: call.name, input: call.input };
        });
        this.messages.push({ role: 'assistant', text: content.text ?? '', toolCalls });
        break;
      }
      case 'tool':
        this.messages.push({
          role: 'tool',
          results: (content.toolResults ?? []).map((result) => ({
            toolCallId: result.toolCallId,
            toolName: this.#toolNames.get(result.toolCallId) ?? 'unknown',
            output: typeof result.output === 'string' ? result.output : JSON.stringify(result.output),
            isError: result.isError === true,
          })),
        });
        break;
    }
  }
}

/** Maps the stored conversation to the model's message shapes. */
export function toModelMessages(records: readonly MessageRecord[]): ModelMessage[] {
  const builder = new ModelMessageBuilder();
  for (const record of records) builder.append(record);
  return builder.messages;
}

export class ConversationView {
  readonly #store: SessionStore;
  readonly #sessionId: SessionId;
  #records: MessageRecord[] = [];
  #model = new ModelMessageBuilder();
  #generation: number | undefined;
  #lastSeq = 0;

  constructor(store: SessionStore, sessionId: SessionId) {
    this.#store = store;
    this.#sessionId = sessionId;
  }

  /** The live branch, oldest first (a fresh array). */
  records(): MessageRecord[] {
    this.#refresh();
    return [...this.#records];
  }

  /** The live branch in the model's shapes, oldest first (a fresh array). */
  modelMessages(): ModelMessage[] {
    this.#refresh();
    return [...this.#model.messages];
  }

  #refresh(): void {
    // The generation first: a rewind between the two reads is seen by the next refresh.
    const generation = this.#store.getSession(this.#sessionId)?.branchGeneration;
    if (generation !== this.#generation) {
      this.#generation = generation;
      this.#records = [];
      this.#model = new ModelMessageBuilder();
      this.#lastSeq = 0;
    }
    for (const record of this.#store.listMessages(this.#sessionId, { afterSeq: this.#lastSeq })) {
      this.#records.push(record);
      this.#model.append(record);
      this.#lastSeq = record.seq;
    }
  }
}
