/** A stored task record as the input that writes it again (a change to one field, the rest as stored). */
import type { StoredTask } from './records.js';
import type { TaskRecordInput } from './session-store.js';

export function taskRecordInput(record: StoredTask): TaskRecordInput {
  const facts = record.process;
  return {
    id: record.id,
    ...(record.sessionId === undefined ? {} : { sessionId: record.sessionId }),
    kind: record.kind,
    label: record.label,
    status: record.status,
    detail: record.detail,
    isBackgrounded: record.isBackgrounded,
    branchGeneration: record.branchGeneration,
    ...(record.stopInitiator === undefined ? {} : { stopInitiator: record.stopInitiator }),
    startedAt: record.startedAt,
    ...(record.endedAt === undefined ? {} : { endedAt: record.endedAt }),
    reported: record.reported,
    ...(record.error === undefined ? {} : { error: record.error }),
    ...(record.resultText === undefined ? {} : { resultText: record.resultText }),
    ...(record.outputFile === undefined ? {} : { outputFile: record.outputFile }),
    ...(facts === undefined
      ? {}
      : {
          process: {
            ...(facts.pid === undefined ? {} : { pid: facts.pid }),
            ...(facts.startTime === undefined ? {} : { startTime: facts.startTime }),
            ...(facts.bootId === undefined ? {} : { bootId: facts.bootId }),
            ...(facts.pgid === undefined ? {} : { pgid: facts.pgid }),
            ...(facts.tag === undefined ? {} : { tag: facts.tag }),
          },
        }),
    ...(record.statusFile === undefined ? {} : { statusFile: record.statusFile }),
    durable: record.durable,
    readOffset: record.readOffset,
  };
}
