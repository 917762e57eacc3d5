/**
 * Observation cursors: many readers of one task's output at their own positions, none consuming what
 * another reads (the model's read included); missed bytes marked; final-output and streamless tasks
 * defined; waits; bounds (per task, per service, idle expiry); closed with the task's retention.
 */
import assert from 'node:assert/strict';
import { createOwner, type OutputCursor, type OutputCursorRead } from '../../tasks/index.js';
import { failsWith } from './case-context.js';
import type { ConformanceGroup } from './conformance-case.js';

/** Reads until nothing new comes, returning the text read and the last result. */
async function drain(
  cursor: OutputCursor,
  maxBytes?: number,
): Promise<{ text: string; last: OutputCursorRead }> {
  let text = '';
  for (;;) {
    const read = await cursor.read(maxBytes === undefined ? {} : { maxBytes });
    text += read.text;
    if (read.next === read.end || read.text === '') return { text, last: read };
  }
}

export const cursorCases: ConformanceGroup = {
  name: 'observation cursors',
  cases: [
    {
      name: "each cursor reads at its own position, and none moves the model's read",
      async run({ tasks, start }) {
        const { task, snapshot } = await start();
        const first = await tasks.openCursor(snapshot.id);
        assert.equal(first.stream, 'bytes');
        task.push('one\n');
        assert.equal((await first.read()).text, 'one\n');
        assert.equal((await tasks.read(snapshot.id)).text, 'one\n', 'the model read its own way');
        task.push('two\n');
        const second = await tasks.openCursor(snapshot.id);
        const read = await second.read();
        assert.equal(read.text, 'one\ntwo\n');
        assert.deepEqual([read.from, read.next, read.missedBytes, read.ended], [0, 8, 0, false]);
        assert.equal((await first.read()).text, 'two\n');
        assert.equal((await tasks.read(snapshot.id)).text, 'two\n');
        assert.equal((await first.read()).text, '', 'nothing new for the first cursor');
        assert.equal(first.position, 8);
        assert.equal(second.position, 8);
      },
    },
    {
      name: 'opens at the start, at the end, at the newest bytes, or at an offset',
      async run({ tasks, start }) {
        const { task, snapshot } = await start();
        task.push('0123456789');
        assert.equal(
          (await (await tasks.openCursor(snapshot.id, undefined, { from: 'start' })).read()).text,
          '0123456789',
        );
        const atEnd = await tasks.openCursor(snapshot.id, undefined, { from: 'end' });
        assert.equal(atEnd.position, 10);
        const newest = await tasks.openCursor(snapshot.id, undefined, { from: 'end', tailBytes: 3 });
        const atOffset = await tasks.openCursor(snapshot.id, undefined, { from: 4 });
        task.push('ab');
        assert.equal((await atEnd.read()).text, 'ab');
        assert.equal((await newest.read()).text, '789ab');
        const read = await atOffset.read();
        assert.equal(read.text, '456789ab');
        assert.equal(read.from, 4);
        const beyond = await tasks.openCursor(snapshot.id, undefined, { from: 'end', tailBytes: 1000 });
        assert.equal(beyond.position, 0, 'the newest bytes are at most all of them');
      },
    },
    {
      name: 'never ends a read inside a character, and skips the rest of one it starts inside',
      async run({ tasks, start }) {
        const { task, snapshot } = await start();
        const text = 'aé中😀b'.repeat(3);
        task.push(text);
        const cursor = await tasks.openCursor(snapshot.id);
        let read = '';
        for (let step = 0; step < 100 && cursor.position < task.streamBytes; step += 1) {
          read += (await cursor.read({ maxBytes: 4 })).text;
        }
        assert.equal(read, text);
        // Offset 2 lies inside "é" (bytes 1-2): the reader starts at the next character.
        const inside = await (await tasks.openCursor(snapshot.id, undefined, { from: 2 })).read();
        assert.equal(inside.from, 3);
        assert.equal(inside.text, text.slice(2));
      },
    },
    {
      name: 'a cursor behind the retained window reads a marker counting the bytes it missed',
      async run({ tasks, start }) {
        const { task, snapshot } = await start({ retainBytes: 10 });
        const cursor = await tasks.openCursor(snapshot.id);
        task.push('aaaaa');
        assert.equal((await cursor.read()).text, 'aaaaa');
        task.push('bbbbbccccccccccc');
        const read = await cursor.read();
        // 21 bytes pushed, the newest 10 kept: bytes 5 to 10 left before this cursor read them.
        assert.equal(read.missedBytes, 6);
        assert.equal(read.from, 11);
        assert.match(read.text, /^\[\.\.\. 6 bytes skipped(; full output: [^\n]+)? \.\.\.\]\ncccccccccc$/);
        assert.equal(read.next, 21);
        const late = await tasks.openCursor(snapshot.id);
        assert.match((await late.read()).text, /^\[\.\.\. 11 bytes skipped/);
      },
    },
    {
      name: 'reading with a cursor claims nothing, even the end of a finished task',
      async run(context) {
        const { tasks, start } = context;
        const { task, snapshot } = await start();
        const cursor = await tasks.openCursor(snapshot.id);
        task.push('done\n');
        task.settle();
        await context.settled(snapshot.id);
        const read = await cursor.read();
        assert.equal(read.text, 'done\n');
        assert.equal(read.ended, true);
        assert.equal(read.status, 'completed');
        assert.equal(tasks.get(snapshot.id).reported, false);
        assert.equal((await tasks.read(snapshot.id)).text, 'done\n', 'the model still reads everything');
        assert.equal(tasks.claim(snapshot.id), false, 'the model read claimed it');
      },
    },
    {
      name: "a final-output task's cursors read nothing while it runs, then its result",
      async run(context) {
        const { tasks, start } = context;
        const { task, snapshot } = await start({ streaming: false });
        const cursor = await tasks.openCursor(snapshot.id);
        assert.equal(cursor.stream, 'final');
        const early = await cursor.read();
        assert.deepEqual([early.text, early.end, early.ended, early.stream], ['', 0, false, 'final']);
        task.settle({ status: 'completed', output: 'the answer é' });
        await context.settled(snapshot.id);
        const read = await cursor.read();
        assert.equal(read.text, 'the answer é');
        assert.equal(read.ended, true);
        const again = await tasks.openCursor(snapshot.id, undefined, { from: 'end', tailBytes: 6 });
        assert.equal((await again.read()).text, 'wer é');
        assert.equal(tasks.get(snapshot.id).reported, false);
      },
    },
    {
      name: 'a streaming task without a byte stream: cursors read nothing and end with the task',
      async run(context) {
        const { tasks, start } = context;
        const { task, snapshot } = await start({ observable: false });
        const cursor = await tasks.openCursor(snapshot.id);
        assert.equal(cursor.stream, 'none');
        task.push('only for the model');
        assert.equal((await cursor.read()).text, '');
        task.settle();
        await context.settled(snapshot.id);
        const read = await cursor.read();
        assert.deepEqual([read.text, read.ended, read.stream], ['', true, 'none']);
        assert.equal((await tasks.read(snapshot.id)).text, 'only for the model');
      },
    },
    {
      name: 'a read waits up to waitMs for new output, and for the end',
      async run({ tasks, start, isPending }) {
        const { task, snapshot } = await start();
        const cursor = await tasks.openCursor(snapshot.id);
        const waiting = cursor.read({ waitMs: 60_000 });
        assert.equal(await isPending(waiting), true, 'nothing written yet');
        task.push('late');
        assert.equal((await waiting).text, 'late');
        const untilEnd = cursor.read({ waitMs: 60_000 });
        assert.equal(await isPending(untilEnd), true);
        task.settle();
        const last = await untilEnd;
        assert.deepEqual([last.text, last.ended], ['', true]);
        const aborted = new AbortController();
        const { snapshot: other } = await start();
        const quiet = (await tasks.openCursor(other.id)).read({ waitMs: 60_000, signal: aborted.signal });
        assert.equal(await isPending(quiet), true);
        aborted.abort();
        assert.equal((await quiet).text, '', 'an aborted wait answers with what is there');
      },
    },
    {
      name: 'opens only on a task the caller may see: anything else is TASK_NOT_FOUND',
      async run({ tasks, start }) {
        const alice = createOwner('alice');
        const { snapshot } = await start({ owner: alice });
        await failsWith(() => tasks.openCursor(snapshot.id, createOwner('bob')), 'TASK_NOT_FOUND');
        await failsWith(() => tasks.openCursor(snapshot.id), 'TASK_NOT_FOUND');
        await failsWith(() => tasks.openCursor('bash-999', alice), 'TASK_NOT_FOUND');
        const cursor = await tasks.openCursor(snapshot.id, createOwner('alice'));
        assert.equal(cursor.taskId, snapshot.id, 'session equality grants access');
      },
    },
    {
      name: 'refuses a position outside the stream and bad read options, naming the field',
      limits: { maxCursorReadBytes: 64 },
      async run({ tasks, start }) {
        const { task, snapshot } = await start();
        task.push('12345');
        await failsWith(
          () => tasks.openCursor(snapshot.id, undefined, { from: 6 }),
          'INVALID_ARGUMENT',
          'from',
        );
        await failsWith(
          () => tasks.openCursor(snapshot.id, undefined, { from: -1 }),
          'INVALID_ARGUMENT',
          'from',
        );
        await failsWith(
          () => tasks.openCursor(snapshot.id, undefined, { tailBytes: 2 }),
          'INVALID_ARGUMENT',
          'tailBytes',
        );
        await failsWith(
          () => tasks.openCursor(snapshot.id, undefined, { from: 'end', tailBytes: -2 }),
          'INVALID_ARGUMENT',
          'tailBytes',
        );
        const cursor = await tasks.openCursor(snapshot.id);
        await failsWith(() => cursor.read({ maxBytes: 3 }), 'INVALID_ARGUMENT', 'maxBytes');
        await failsWith(() => cursor.read({ maxBytes: 65 }), 'INVALID_ARGUMENT', 'maxBytes');
        await failsWith(() => cursor.read({ waitMs: -1 }), 'INVALID_ARGUMENT', 'waitMs');
        assert.equal(cursor.position, 0, 'a refused read moves nothing');
        assert.equal((await cursor.read({ maxBytes: 64 })).text, '12345');
      },
    },
    {
      name: 'bounds open cursors per task and in the whole service; closing frees a slot',
      limits: { maxCursorsPerTask: 2, maxCursors: 3 },
      async run({ tasks, start }) {
        const { snapshot: one } = await start();
        const { snapshot: two } = await start();
        const first = await tasks.openCursor(one.id);
        await tasks.openCursor(one.id);
        await failsWith(() => tasks.openCursor(one.id), 'CURSOR_LIMIT', 'maxCursorsPerTask');
        await tasks.openCursor(two.id);
        await failsWith(() => tasks.openCursor(two.id), 'CURSOR_LIMIT', 'maxCursors');
        first.close();
        first.close();
        await failsWith(() => first.read(), 'CURSOR_CLOSED');
        await tasks.openCursor(two.id);
      },
    },
    {
      name: 'closes a cursor left idle longer than cursorIdleMs',
      limits: { maxCursorsPerTask: 1, cursorIdleMs: 1 },
      async run({ tasks, start, eventually }) {
        const { snapshot } = await start();
        const idle = await tasks.openCursor(snapshot.id);
        let replacement: OutputCursor | undefined;
        await eventually(() => {
          // The idle one's slot is free once it expired; until then the per-task cap refuses.
          void tasks.openCursor(snapshot.id).then(
            (cursor) => {
              replacement ??= cursor;
            },
            () => {},
          );
          return replacement !== undefined;
        }, 'the idle cursor to expire and free its slot');
        await failsWith(() => idle.read(), 'CURSOR_CLOSED');
      },
    },
    {
      name: "closes a task's cursors when the task is forgotten, and a waiting read with them",
      limits: { maxRetainedTasksPerOwner: 1 },
      async run(context) {
        const { tasks, start, isPending } = context;
        const { task, snapshot } = await start();
        const cursor = await tasks.openCursor(snapshot.id);
        task.push('kept until forgotten');
        task.settle();
        await context.settled(snapshot.id);
        const { task: next, snapshot: later } = await start();
        const waiting = (await tasks.openCursor(later.id)).read({ waitMs: 60_000 });
        assert.equal(await isPending(waiting), true);
        waiting.catch(() => {});
        const closing = await tasks.openCursor(later.id);
        const pending = closing.read({ waitMs: 60_000 });
        pending.catch(() => {});
        closing.close();
        await failsWith(() => pending, 'CURSOR_CLOSED');
        next.settle();
        await context.settled(later.id);
        await failsWith(() => cursor.read(), 'CURSOR_CLOSED');
        await failsWith(() => tasks.openCursor(snapshot.id), 'TASK_NOT_FOUND');
      },
    },
    {
      name: "closes the cursors of a task that is re-registered: the new attempt's output starts over",
      async run(context) {
        const { tasks, start } = context;
        const owner = createOwner('resumer');
        const { task, snapshot } = await start({ owner, kind: 'workflow' });
        task.push('first attempt');
        const cursor = await tasks.openCursor(snapshot.id, owner);
        task.settle();
        await context.settled(snapshot.id);
        const { task: again } = await start({ owner, kind: 'workflow', spec: { resumeId: snapshot.id } });
        await failsWith(() => cursor.read(), 'CURSOR_CLOSED');
        again.push('second');
        assert.equal((await (await tasks.openCursor(snapshot.id, owner)).read()).text, 'second');
      },
    },
    {
      name: 'disposal closes every cursor',
      async run({ tasks, start }) {
        const { task, snapshot } = await start();
        task.push('x');
        const cursor = await tasks.openCursor(snapshot.id);
        const disposal = tasks.dispose();
        task.settle({ status: 'killed' });
        await disposal;
        await failsWith(() => cursor.read(), 'CURSOR_CLOSED');
        await failsWith(() => tasks.openCursor(snapshot.id), 'SERVICE_DISPOSED');
      },
    },
    {
      name: 'drains a long output in bounded reads, in order and complete',
      limits: { maxCursorReadBytes: 1000 },
      async run({ tasks, start }) {
        const { task, snapshot } = await start();
        const lines = Array.from({ length: 500 }, (_, index) => `line ${index} ${'é'.repeat(index % 7)}\n`);
        const readers = [await tasks.openCursor(snapshot.id), await tasks.openCursor(snapshot.id)];
        for (const line of lines) task.push(line);
        const [one, two] = await Promise.all(readers.map((reader) => drain(reader)));
        assert.equal(one?.text, lines.join(''));
        assert.equal(two?.text, lines.join(''));
      },
    },
  ],
};
