/**
 * A session's live conversation kept in memory. The session is the only writer of its conversation while
 * it holds it, and hands the view each message it committed (`appended`); a model request then reads
 * nothing from the store. The store is read, for the messages after the last seq held, only when the view
 * cannot vouch for what it holds: at first, after a record that does not follow the last one held (one
 * written another way, or a seq the store gave again after a rolled-back write), and after a rewind —
 * seqs are never reused and a rewind bumps the branch generation, so a generation other than the one held
 * means "read it all again", the only case where the view starts over. Either way a request costs the
 * same at 50k messages as at 1k.
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

export interface ConversationViewOptions {
  /**
   * The writer of the conversation: the session holding it, which knows its branch generation and hands
   * the view every message it commits (`appended`). Without one, every read asks the store for the
   * messages after the last seq held, and reads the generation from the store.
   */
  readonly writer?: { readonly generation: () => number };
}

export class ConversationView {
  readonly #store: SessionStore;
  readonly #sessionId: SessionId;
  readonly #generationOf: () => number | undefined;
  readonly #ownWrites: boolean;
  #records: MessageRecord[] = [];
  #model = new ModelMessageBuilder();
  #generation: number | undefined;
  #lastSeq = 0;
  /** Whether the store may hold messages after `#lastSeq` that the view has not seen. */
  #stale = true;

  constructor(store: SessionStore, sessionId: SessionId, options: ConversationViewOptions = {}) {
    this.#store = store;
    this.#sessionId = sessionId;
    const writer = options.writer;
    this.#ownWrites = writer !== undefined;
    this.#generationOf =
      writer?.generation ?? (() => this.#store.getSession(this.#sessionId)?.branchGeneration);
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

  /**
   * A message of this session the caller just committed. Kept without a read when it follows the last
   * one held on the branch held; anything else leaves the next read to the store.
   */
  appended(record: MessageRecord): void {
    if (!this.#ownWrites || record.sessionId !== this.#sessionId) return;
    if (record.seq <= this.#lastSeq) {
      // Held already (a read since its commit found it: the last one held), or a seq given again after a
      // write held here was rolled back: then what is held is not the store's, and the view starts over.
      if (!sameRecord(this.#records.at(-1), record)) this.#generation = undefined;
      return;
    }
    if (
      !this.#stale &&
      record.seq === this.#lastSeq + 1 &&
      record.branchGeneration === this.#generation &&
      !record.abandoned
    ) {
      this.#take(record);
      return;
    }
    this.#stale = true;
  }

  #refresh(): void {
    // The generation first: a rewind between the two reads is seen by the next refresh.
    const generation = this.#generationOf();
    if (generation !== this.#generation) {
      this.#generation = generation;
      this.#records = [];
      this.#model = new ModelMessageBuilder();
      this.#lastSeq = 0;
      this.#stale = true;
    }
    if (this.#ownWrites && !this.#stale) return;
    for (const record of this.#store.listMessages(this.#sessionId, { afterSeq: this.#lastSeq })) {
      this.#take(record);
    }
    this.#stale = false;
  }

  #take(record: MessageRecord): void {
    this.#records.push(record);
    this.#model.append(record);
    this.#lastSeq = record.seq;
  }
}

function sameRecord(held: MessageRecord | undefined, record: MessageRecord): boolean {
  return (
    held !== undefined &&
    held.seq === record.seq &&
    held.createdAt === record.createdAt &&
    held.role === record.role &&
    held.source === record.source &&
    JSON.stringify(held.content) === JSON.stringify(record.content)
  );
}
