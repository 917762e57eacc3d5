/** What a session tells its viewers: turns, messages, tool calls, notifications and state changes. */
import type { MessageRecord } from '../store/records.js';

export type SessionRunState = 'idle' | 'running' | 'shutting_down' | 'closed';

/** Why a turn started: a person's input, or background results arriving while the session was idle. */
export type TurnSource = 'user' | 'background_task';

export type TurnEndReason = 'completed' | 'interrupted' | 'error' | 'max_steps';

export type SessionEvent =
  | {
      readonly type: 'turn-start';
      readonly turnId: number;
      readonly source: TurnSource;
      readonly title: string;
    }
  | {
      readonly type: 'turn-end';
      readonly turnId: number;
      readonly reason: TurnEndReason;
      readonly text: string;
      readonly error?: string;
    }
  | { readonly type: 'message'; readonly message: MessageRecord }
  | {
      readonly type: 'tool-call-start';
      readonly turnId: number;
      readonly toolCallId: string;
      readonly name: string;
      readonly input: unknown;
    }
  | {
      readonly type: 'tool-call-end';
      readonly turnId: number;
      readonly toolCallId: string;
      readonly name: string;
      readonly isError: boolean;
      readonly text: string;
    }
  | { readonly type: 'notification-queued'; readonly taskId: string; readonly lane: string }
  | { readonly type: 'notification-discarded'; readonly taskId: string; readonly reason: string }
  | { readonly type: 'state'; readonly state: SessionRunState };

export type SessionEventListener = (event: SessionEvent) => void;

/** The outcome of the turn that delivered a user input. */
export interface TurnOutcome {
  readonly turnId: number;
  readonly reason: TurnEndReason;
  /** The last assistant text of the turn. */
  readonly text: string;
  readonly error?: string;
}
