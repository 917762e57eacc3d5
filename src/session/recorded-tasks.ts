/**
 * The finished tasks the store remembers for a caller's session that the task service does not hold — an
 * earlier runtime's, after a resume — for `task_output` and `task_list` (`TaskToolsOptions.recorded`). A
 * caller sees only its own session's records.
 */
import type { SessionStore } from '../store/session-store.js';
import { taskSnapshotFromRecord } from '../store/task-snapshot-from-record.js';
import {
  type Caller,
  isTerminalStatus,
  isTrustedCaller,
  type SessionId,
  TERMINAL_STATUSES,
} from '../tasks/index.js';
import { readFileTail } from '../text/index.js';
import type { RecordedTasks } from '../tools/index.js';

export function storeRecordedTasks(
  store: Pick<SessionStore, 'getTask' | 'listTasks' | 'saveTaskReadOffset'>,
): RecordedTasks {
  return {
    read: (taskId, caller, maxBytes) => {
      const sessionId = callerSession(caller);
      if (sessionId === undefined || typeof taskId !== 'string' || taskId === '') return undefined;
      const record = store.getTask(taskId, sessionId);
      if (record === undefined || !isTerminalStatus(record.status)) return undefined;
      // From the model's cursor: what it read before the restart is not given again.
      const tail =
        record.outputFile === undefined
          ? undefined
          : readFileTail(record.outputFile, maxBytes, record.readOffset);
      if (tail !== undefined && tail.totalBytes > record.readOffset) {
        try {
          store.saveTaskReadOffset(taskId, sessionId, tail.totalBytes);
        } catch {
          // Not recorded: the next read shows the same output again, nothing is lost.
        }
      }
      return {
        snapshot: taskSnapshotFromRecord(record),
        text: tail?.text ?? '',
        totalBytes: tail?.totalBytes,
        fromBytes: Math.min(record.readOffset, tail?.totalBytes ?? 0),
      };
    },
    list: (caller, limit) => {
      const sessionId = callerSession(caller);
      if (sessionId === undefined) return [];
      const finished = store.listTasks({ sessionId, statuses: TERMINAL_STATUSES });
      return finished.slice(Math.max(0, finished.length - limit)).map(taskSnapshotFromRecord);
    },
  };
}

/** The session a caller acts for: an owner's (session equality grants access), none for anyone else. */
function callerSession(caller: Caller): SessionId | undefined {
  if (caller === undefined || isTrustedCaller(caller)) return undefined;
  return caller.sessionId;
}
