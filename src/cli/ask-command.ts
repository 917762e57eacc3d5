/**
 * `errand ask "<question>"`: run inside a command that `errand mcp --http` started as a task through
 * the MCP Tasks extension, it asks that task's client the question (the task turns `input_required`)
 * and prints the answer on stdout once the client sends it with `tasks/update`. Exit 0 with an answer;
 * 1 when the client declines or cancels, or no client can answer; 2 for a usage mistake.
 */
import { connect } from 'node:net';
import type { Writable } from 'node:stream';

/** The socket `errand mcp --http` gives its commands (kept in step with `ASK_SOCKET_VARIABLE`). */
const ASK_SOCKET_VARIABLE = 'ERRAND_ASK_SOCKET';

export const ASK_USAGE = `Usage: errand ask "<question>"

Asks the MCP client of the task this command runs in, and prints its answer. Works in commands that
errand mcp --http started as a task through the MCP Tasks extension (io.modelcontextprotocol/tasks).
`;

export interface AskIo {
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export async function runAskCommand(argv: readonly string[], io: AskIo): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.stdout.write(ASK_USAGE);
    return 0;
  }
  if (argv.length !== 1 || (argv[0] as string).trim() === '') {
    io.stderr.write(
      `errand ask: expected one non-empty question, got ${argv.length} arguments\n\n${ASK_USAGE}`,
    );
    return 2;
  }
  const socketPath = io.env[ASK_SOCKET_VARIABLE];
  if (socketPath === undefined || socketPath === '') {
    io.stderr.write(
      `errand ask: no client to ask: $${ASK_SOCKET_VARIABLE} is not set (run it in a command of errand mcp --http)\n`,
    );
    return 1;
  }
  const reply = await new Promise<{ answer?: unknown; error?: unknown }>((resolve) => {
    const socket = connect(socketPath);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.once('error', (error) => resolve({ error: `cannot reach the server: ${error.message}` }));
    socket.once('close', () => {
      try {
        resolve(JSON.parse(text.trim()) as { answer?: unknown; error?: unknown });
      } catch {
        resolve({ error: 'the server closed the connection without an answer' });
      }
    });
    // Not end(): a half-closed connection is the asker going away, which withdraws the question.
    socket.write(`${JSON.stringify({ question: argv[0], pid: process.pid })}\n`);
  });
  if (typeof reply.answer === 'string') {
    io.stdout.write(`${reply.answer}\n`);
    return 0;
  }
  io.stderr.write(`errand ask: ${String(reply.error ?? 'no answer')}\n`);
  return 1;
}
