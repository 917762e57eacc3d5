/**
 * The socket `errand ask` reaches from inside a command: one JSON line `{ "question", "pid" }` in, one
 * line `{ "answer" }` or `{ "error" }` out. The asking process is matched to the running task whose
 * process is among its ancestors (read from `/proc`), and the question goes to that task's client as an
 * input request (`input_required` in the MCP Tasks extension); a question nobody can answer is refused
 * at once. A client that hangs up withdraws its question.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '../tasks/index.js';
import type { QuestionAnswer } from './errand-task-store.js';

/** The variable that tells a command where the socket is. */
export const ASK_SOCKET_VARIABLE = 'ERRAND_ASK_SOCKET';

/** The most bytes of one question line; a longer one is refused. */
export const MAX_QUESTION_BYTES = 8 * 1024;

export interface TaskQuestionsOptions {
  readonly socketPath: string;
  /** Asks the question for the task among `ancestors`; undefined when none can be asked. */
  readonly ask: (
    ancestors: ReadonlySet<number>,
    question: string,
    signal: AbortSignal,
  ) => Promise<QuestionAnswer> | undefined;
  readonly logger: Logger;
  /** Questions open at once; one more is refused. */
  readonly maxOpen: number;
}

export interface TaskQuestions {
  close(): Promise<void>;
}

export async function startTaskQuestions(options: TaskQuestionsOptions): Promise<TaskQuestions> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    if (sockets.size >= options.maxOpen) {
      socket.end(
        `${JSON.stringify({ error: `too many questions open (the limit is ${options.maxOpen})` })}\n`,
      );
      return;
    }
    sockets.add(socket);
    const abort = new AbortController();
    socket.once('close', () => {
      sockets.delete(socket);
      abort.abort();
    });
    socket.on('error', () => {});
    let buffer = '';
    socket.setEncoding('utf8');
    const onData = (chunk: string) => {
      buffer += chunk;
      if (Buffer.byteLength(buffer) > MAX_QUESTION_BYTES) {
        socket.off('data', onData);
        socket.end(
          `${JSON.stringify({ error: `the question is longer than ${MAX_QUESTION_BYTES} bytes` })}\n`,
        );
        return;
      }
      const end = buffer.indexOf('\n');
      if (end < 0) return;
      socket.off('data', onData);
      void answer(buffer.slice(0, end), abort.signal).then((reply) => {
        if (!socket.destroyed) socket.end(`${JSON.stringify(reply)}\n`);
      });
    };
    socket.on('data', onData);
  });

  const answer = async (line: string, signal: AbortSignal): Promise<Record<string, unknown>> => {
    let message: { question?: unknown; pid?: unknown };
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      return { error: 'expected one JSON line' };
    }
    if (typeof message.question !== 'string' || message.question.trim() === '') {
      return { error: 'expected a non-empty `question`' };
    }
    if (typeof message.pid !== 'number' || !Number.isSafeInteger(message.pid)) {
      return { error: 'expected the asking process `pid`' };
    }
    const asked = options.ask(ancestorsOf(message.pid), message.question, signal);
    if (asked === undefined) {
      return {
        error:
          'no client can answer: only a command started as a task through the MCP Tasks extension (io.modelcontextprotocol/tasks) can ask',
      };
    }
    const reply = await asked;
    return reply.action === 'accept'
      ? { answer: reply.answer }
      : { error: `the client chose ${reply.action}` };
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** `pid` and its ancestors (their parent pids read from `/proc/<pid>/stat`), up to init. */
export function ancestorsOf(pid: number): Set<number> {
  const found = new Set<number>();
  let current = pid;
  while (current > 1 && !found.has(current) && found.size < 128) {
    found.add(current);
    try {
      const stat = readFileSync(`/proc/${current}/stat`, 'utf8');
      // The name (field 2) may hold spaces and parentheses: the fields after its last ')' are plain.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      current = Number(fields[1]);
    } catch {
      break;
    }
  }
  return found;
}
