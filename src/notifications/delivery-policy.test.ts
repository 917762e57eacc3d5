import { describe, expect, it } from 'vitest';
import { capturingLogger, flushMicrotasks, serviceForTest } from '../../test/support/registry.js';
import { createOwner, type Owner, type TaskService } from '../tasks/index.js';
import { type ScriptedTaskOptions, scriptedTask } from '../testing/index.js';
import {
  createDeliveryPolicy,
  type DeliveryPolicyOptions,
  type NotificationFormatter,
  type TaskNotification,
} from './index.js';

interface Harness {
  tasks: TaskService;
  owner: Owner;
  queue: TaskNotification[];
  logger: ReturnType<typeof capturingLogger>;
  policy: ReturnType<typeof createDeliveryPolicy>;
  start(options?: ScriptedTaskOptions): Promise<{ id: string; task: ReturnType<typeof scriptedTask> }>;
}

function harness(options: Partial<DeliveryPolicyOptions> = {}): Harness {
  const { tasks } = serviceForTest();
  const owner = options.owner ?? createOwner('session-1');
  const queue: TaskNotification[] = [];
  const logger = capturingLogger();
  const policy = createDeliveryPolicy({
    tasks,
    owner,
    enqueue: (notification) => void queue.push(notification),
    logger,
    now: () => 42,
    ...options,
  });
  return {
    tasks,
    owner,
    queue,
    logger,
    policy,
    async start(taskOptions = {}) {
      const task = scriptedTask({ kind: 'bash', label: 'npm test', owner, ...taskOptions });
      const { id } = await tasks.start(task.spec);
      return { id, task };
    },
  };
}

describe('delivery policy', () => {
  it('returns no claim and logs nothing when the task was forgotten before its refused notification', async () => {
    const owner = createOwner('session-1');
    let forget: (() => Promise<void>) | undefined;
    const h = harness({
      owner,
      enqueue: async () => {
        // The session closes while the notification is handed over: its tasks are forgotten, the queue refuses.
        await forget?.();
        throw new Error('the session is closed');
      },
    });
    const { id, task } = await h.start();
    forget = () => owner.dispose();
    task.settle({ status: 'completed' });
    await flushMicrotasks(20);
    expect(() => h.tasks.get(id, owner)).toThrow(expect.objectContaining({ code: 'TASK_NOT_FOUND' }));
    expect(h.logger.warnings.map((warning) => warning.message)).toEqual([
      `task ${id}: enqueueing its notification failed; the claim was returned`,
    ]);
  });

  it('delivers one notification for a terminal task, with its routing facts', async () => {
    const h = harness();
    const { id, task } = await h.start({
      spec: { detail: { toolUseId: 'call_1', outputFile: '/out/bash-1' } },
    });
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flushMicrotasks();
    expect(h.queue).toHaveLength(1);
    expect(h.queue[0]).toEqual({
      taskId: id,
      kind: 'bash',
      label: 'npm test',
      status: 'completed',
      event: 'terminal',
      lane: 'wakeup',
      priority: 'next',
      attempt: 1,
      startedAt: 1000,
      branchGeneration: 0,
      toolUseId: 'call_1',
      createdAt: 42,
      text: [
        '<task-notification>',
        `<task-id>${id}</task-id>`,
        '<tool-use-id>call_1</tool-use-id>',
        '<output-file>/out/bash-1</output-file>',
        '<status>completed</status>',
        '<summary>Background command "npm test" completed (exit code 0)</summary>',
        '<exit-code>0</exit-code>',
        `<collect>Read it with task_output (task_id "${id}").</collect>`,
        '</task-notification>',
      ].join('\n'),
    });
    expect(h.tasks.get(id, h.owner).reported).toBe(true);
  });

  it('does not notify what a live waiter received', async () => {
    const h = harness();
    const { id, task } = await h.start();
    const waited = h.tasks.wait(id, 60_000, h.owner);
    task.settle({ status: 'completed' });
    expect((await waited).status).toBe('completed');
    await flushMicrotasks();
    expect(h.queue).toEqual([]);
  });

  it('does not notify foreground work: its tool call returned the result; promoted work is notified', async () => {
    const h = harness();
    const foreground = await h.start({ background: false });
    foreground.task.settle({ status: 'completed', detail: { exitCode: 0 } });
    const promoted = await h.start({ background: false });
    h.tasks.requestBackground(promoted.id, h.owner);
    promoted.task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flushMicrotasks();
    expect(h.queue.map((notification) => notification.taskId)).toEqual([promoted.id]);
  });

  it('does not notify a stop by the model, and claims it', async () => {
    const h = harness();
    const { id } = await h.start();
    await h.tasks.kill(id, h.owner, 'no longer needed', { initiator: 'model' });
    await flushMicrotasks();
    expect(h.queue).toEqual([]);
    expect(h.tasks.get(id, h.owner)).toMatchObject({ status: 'killed', reported: true });
  });

  it('notifies a stop by the user', async () => {
    const h = harness();
    const { id } = await h.start();
    await h.tasks.kill(id, h.owner, 'user pressed stop', { initiator: 'user' });
    await flushMicrotasks();
    expect(h.queue).toHaveLength(1);
    expect(h.queue[0]?.text).toContain('<summary>Background command "npm test" was stopped</summary>');
  });

  it('notifies a model stop of an opted-in kind', async () => {
    const h = harness({ notifyModelStops: ['workflow'] });
    const { id } = await h.start({ kind: 'workflow', label: 'deploy', streaming: false });
    await h.tasks.kill(id, h.owner, undefined, { initiator: 'model' });
    await flushMicrotasks();
    expect(h.queue[0]?.text).toContain('amend the workflow');
  });

  it.each([
    ['superseded', { spec: { detail: { supersededBy: 'workflow-9' } } }, {}],
    ['shutting_down', {}, { isShuttingDown: () => true }],
    ['sealed', {}, { isSealed: () => true }],
    ['branch_mismatch', {}, { currentBranchGeneration: () => 1 }],
  ] as const)('suppresses a %s task without taking its claim', async (reason, taskOptions, policyOptions) => {
    const h = harness(policyOptions);
    const { id, task } = await h.start(taskOptions);
    task.settle();
    await flushMicrotasks();
    expect(h.queue).toEqual([]);
    expect(h.tasks.get(id, h.owner).reported).toBe(false);
    expect(await h.policy.deliver(h.tasks.get(id, h.owner))).toEqual({ delivered: false, reason });
  });

  it('seal() stops later deliveries', async () => {
    const h = harness();
    const { task } = await h.start();
    h.policy.seal();
    expect(h.policy.sealed).toBe(true);
    task.settle();
    await flushMicrotasks();
    expect(h.queue).toEqual([]);
  });

  it('checks the branch generation again after reading the tail, and returns the claim', async () => {
    let generation = 0;
    let releaseTail!: (tail: string) => void;
    const h = harness({
      currentBranchGeneration: () => generation,
      readOutputTail: () => new Promise<string>((resolve) => (releaseTail = resolve)),
    });
    const { id, task } = await h.start();
    task.settle();
    await flushMicrotasks();
    expect(h.tasks.get(id, h.owner).reported).toBe(true);
    generation = 1;
    releaseTail('late');
    await flushMicrotasks();
    expect(h.queue).toEqual([]);
    expect(h.tasks.get(id, h.owner).reported).toBe(false);
  });

  it('never returns the claim of a newer attempt when an older notification fails after a resume', async () => {
    let releaseTail: (() => void) | undefined;
    const enqueued: TaskNotification[] = [];
    const h = harness({
      readOutputTail: (snapshot) =>
        snapshot.attempt === 1
          ? new Promise<string>((resolve) => (releaseTail = () => resolve('old')))
          : 'new',
      enqueue: (notification) => {
        if (notification.attempt === 1) throw new Error('queue refused the old attempt');
        enqueued.push(notification);
      },
    });
    const first = await h.start();
    first.task.settle();
    await flushMicrotasks();
    // While the first attempt's tail is read, the task is resumed and its second attempt ends.
    const second = scriptedTask({
      kind: 'bash',
      label: 'npm test',
      owner: h.owner,
      spec: { resumeId: first.id as never },
    });
    await h.tasks.start(second.spec);
    second.settle();
    await flushMicrotasks();
    releaseTail?.();
    await flushMicrotasks(10);
    expect(enqueued.map((notification) => notification.attempt)).toEqual([2]);
    expect(h.tasks.get(first.id, h.owner)).toMatchObject({ attempt: 2, reported: true });
  });

  it('returns the claim and logs when enqueueing fails, so a reader can still take it', async () => {
    const h = harness({
      enqueue: () => {
        throw new Error('queue closed');
      },
    });
    const { id, task } = await h.start();
    task.settle();
    await flushMicrotasks();
    expect(h.tasks.get(id, h.owner).reported).toBe(false);
    expect(h.logger.warnings.map((warning) => warning.message)).toEqual([
      `task ${id}: enqueueing its notification failed; the claim was returned`,
    ]);
    expect(h.logger.warnings[0]?.context).toMatchObject({ error: 'queue closed' });
    expect(h.tasks.claim(id, h.owner)).toBe(true);
  });

  it('treats a rejected asynchronous enqueue like a throw', async () => {
    const h = harness({ enqueue: () => Promise.reject(new Error('disk full')) });
    const { id, task } = await h.start();
    task.settle();
    await flushMicrotasks(10);
    expect(h.tasks.get(id, h.owner).reported).toBe(false);
    expect(h.policy.consecutiveWakes).toBe(0);
  });

  it('notifies only the exact owner instance, never a new owner with the same session id', async () => {
    const h = harness();
    const other = createOwner('session-1');
    const task = scriptedTask({ owner: other });
    await h.tasks.start(task.spec);
    task.settle();
    await flushMicrotasks();
    expect(h.queue).toEqual([]);
  });

  it('takes the tail from the non-consuming source, leaving the model’s read cursor alone', async () => {
    const h = harness({ readOutputTail: (snapshot) => `tail of ${snapshot.id}` });
    const { id, task } = await h.start();
    task.push('all the output\n');
    task.settle({ status: 'completed', detail: { exitCode: 0 } });
    await flushMicrotasks();
    expect(h.queue[0]?.text).toContain(`<output-tail>\ntail of ${id}\n</output-tail>`);
    expect((await h.tasks.read(id, h.owner)).text).toBe('all the output\n');
  });

  it('uses detail.outputTail by default and can leave the tail out', async () => {
    const h = harness();
    const { task } = await h.start();
    task.settle({ status: 'failed', detail: { exitCode: 1, outputTail: 'Error: boom' } });
    await flushMicrotasks();
    expect(h.queue[0]?.text).toContain('<output-tail>\nError: boom\n</output-tail>');

    const off = harness({ outputTail: false });
    const second = await off.start();
    second.task.settle({ status: 'failed', detail: { exitCode: 1, outputTail: 'Error: boom' } });
    await flushMicrotasks();
    expect(off.queue[0]?.text).not.toContain('output-tail');
  });

  it('logs a failing tail source and delivers without the tail', async () => {
    const h = harness({
      readOutputTail: () => {
        throw new Error('file gone');
      },
    });
    const { task } = await h.start();
    task.settle();
    await flushMicrotasks();
    expect(h.queue).toHaveLength(1);
    expect(h.logger.warnings[0]?.message).toMatch(/reading its output tail/);
  });

  it('falls back to the generic form when a custom formatter throws', async () => {
    const broken: NotificationFormatter = () => {
      throw new Error('formatter bug');
    };
    const h = harness({ formatters: { bash: broken } });
    const { task } = await h.start();
    task.settle();
    await flushMicrotasks();
    expect(h.queue[0]?.text).toContain('  <kind>bash</kind>');
    expect(h.logger.warnings[0]?.message).toMatch(/formatter failed/);
  });

  it('bounds the text by the task’s outputLimitBytes and the policy maximum', async () => {
    const h = harness({ maxNotificationBytes: 400 });
    const { task } = await h.start({ outputLimitBytes: 150, label: 'x'.repeat(300) });
    task.settle({ status: 'completed', detail: { exitCode: 0, outputTail: 'y'.repeat(1000) } });
    await flushMicrotasks();
    const text = h.queue[0]?.text ?? '';
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(150);
    expect(text).toContain('<collect>');
  });

  describe('lanes and the wake budget', () => {
    it('routes by task detail, laneOf, kind, then the default', async () => {
      const h = harness({
        lanes: { monitor: 'quiet' },
        laneOf: (snapshot) => (snapshot.label === 'quiet please' ? 'quiet' : undefined),
        wakeBudget: Number.POSITIVE_INFINITY,
      });
      const own = await h.start({ spec: { detail: { notificationLane: 'quiet' } } });
      const byFunction = await h.start({ label: 'quiet please' });
      const byKind = await h.start({ kind: 'monitor' });
      const plain = await h.start();
      for (const started of [own, byFunction, byKind, plain]) started.task.settle();
      await flushMicrotasks();
      expect(h.queue.map((notification) => notification.lane)).toEqual(['quiet', 'quiet', 'quiet', 'wakeup']);
    });

    it('degrades to quiet after 3 wakes without user input, and a user message restores it', async () => {
      const h = harness();
      const lanes = async () => {
        const { task } = await h.start();
        task.settle();
        await flushMicrotasks();
        return h.queue.at(-1)?.lane;
      };
      expect([await lanes(), await lanes(), await lanes(), await lanes()]).toEqual([
        'wakeup',
        'wakeup',
        'wakeup',
        'quiet',
      ]);
      expect(h.policy.consecutiveWakes).toBe(3);
      h.policy.noteUserInput();
      expect(await lanes()).toBe('wakeup');
    });

    it('never wakes with a budget of 0', async () => {
      const h = harness({ wakeBudget: 0 });
      const { task } = await h.start();
      task.settle();
      await flushMicrotasks();
      expect(h.queue[0]?.lane).toBe('quiet');
    });

    it('with external counting, only noteWake() spends the budget', async () => {
      const h = harness({ wakeBudget: 1, wakeCounting: 'external' });
      for (let index = 0; index < 3; index += 1) (await h.start()).task.settle();
      await flushMicrotasks();
      expect(h.queue.map((notification) => notification.lane)).toEqual(['wakeup', 'wakeup', 'wakeup']);
      h.policy.noteWake();
      (await h.start()).task.settle();
      await flushMicrotasks();
      expect(h.queue.at(-1)?.lane).toBe('quiet');
      h.policy.noteUserInput();
      (await h.start()).task.settle();
      await flushMicrotasks();
      expect(h.queue.at(-1)?.lane).toBe('wakeup');
      expect(() => harness({ wakeCounting: 'turns' as never })).toThrow(/`wakeCounting`/);
    });
  });

  it('notifies a running workflow that stalls or needs input, without a claim', async () => {
    const h = harness();
    const { id } = await h.start({ kind: 'workflow', label: 'deploy', streaming: false });
    const outcome = await h.policy.notifyWorkflowProgress(id, {
      type: 'input_needed',
      question: 'Which region?',
    });
    expect(outcome).toMatchObject({
      delivered: true,
      notification: { event: 'input_needed', status: 'running' },
    });
    expect(h.queue[0]?.text).toContain('<question>\nWhich region?\n</question>');
    expect(await h.policy.notifyWorkflowProgress('workflow-99', { type: 'stalled' })).toEqual({
      delivered: false,
      reason: 'not_found',
    });
  });

  it("notifies a monitor's lines on the monitor's lane, with its own key, within the wake budget", async () => {
    const h = harness({ wakeBudget: 0 });
    const { id, task } = await h.start({ label: 'npm run dev' });
    const event = {
      monitorId: 'm1',
      sequence: 2,
      maxNotifications: 20,
      matching: '/error/',
      lines: ['error: a', 'error: <b>'],
      moreLines: 3,
      lane: 'wakeup' as const,
    };
    const outcome = await h.policy.notifyMonitor(id, event);
    // The wake budget is spent: even a waking monitor's lines take the quiet lane.
    expect(outcome).toMatchObject({
      delivered: true,
      notification: { event: 'output_matched', lane: 'quiet', eventKey: 'm1:2', status: 'running' },
    });
    expect(h.queue[0]?.text).toBe(
      [
        '<task-notification>',
        `<task-id>${id}</task-id>`,
        '<event>output_matched</event>',
        '<summary>2 lines of "npm run dev" matched /error/</summary>',
        '<lines>',
        'error: a',
        'error: &lt;b&gt;',
        '</lines>',
        '<more>3 more lines matched; read them with task_output.</more>',
        `<monitor>m1, notification 2 of at most 20; stop it with task_monitor (task_id "${id}", stop: true)</monitor>`,
        `<collect>Read it with task_output (task_id "${id}").</collect>`,
        '</task-notification>',
      ].join('\n'),
    );
    expect(h.tasks.get(id, h.owner).reported).toBe(false);
    const awake = harness({ wakeBudget: 5 });
    const { id: other } = await awake.start();
    expect(await awake.policy.notifyMonitor(other, event)).toMatchObject({
      notification: { lane: 'wakeup' },
    });
    const { id: foreground } = await awake.start({ background: false });
    expect(await awake.policy.notifyMonitor(foreground, event)).toEqual({
      delivered: false,
      reason: 'foreground',
    });
    task.settle();
    expect(await h.policy.notifyMonitor('bash-99', event)).toEqual({ delivered: false, reason: 'not_found' });
  });

  it("queues no notice for a task its own owner's disposal ended, nor for one the service's disposal ended", async () => {
    const h = harness();
    const { task } = await h.start({ onCancel: 'ignore' });
    const { task: quick } = await h.start();
    const disposal = h.owner.dispose();
    task.settle({ status: 'killed' });
    await disposal;
    expect(quick.cancelReasons).toEqual(['owner disposal']);
    const other = createOwner('session-2');
    const policy = createDeliveryPolicy({
      tasks: h.tasks,
      owner: other,
      enqueue: (n) => void h.queue.push(n),
    });
    await h.tasks.start(scriptedTask({ owner: other, onCancel: 'throw' }).spec);
    await h.tasks.start(scriptedTask({ owner: other }).spec);
    await h.tasks.dispose();
    await flushMicrotasks(20);
    expect(h.queue).toEqual([]);
    policy.dispose();
  });

  it('stops delivering once disposed', async () => {
    const h = harness();
    const { id, task } = await h.start();
    h.policy.dispose();
    h.policy.dispose();
    task.settle();
    await flushMicrotasks();
    expect(h.queue).toEqual([]);
    expect(h.tasks.get(id, h.owner).reported).toBe(false);
  });

  it('rejects invalid options before subscribing', () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s');
    const enqueue = () => {};
    expect(() => createDeliveryPolicy({ tasks, owner, enqueue, wakeBudget: -1 })).toThrow(
      'Expected `wakeBudget` to be a non-negative integer or Infinity, got -1 (number)',
    );
    expect(() => createDeliveryPolicy({ tasks, owner, enqueue, lanes: { bash: 'loud' as never } })).toThrow(
      'Expected `lanes.bash` to be "wakeup" or "quiet", got "loud" (string)',
    );
    expect(() =>
      createDeliveryPolicy({ tasks, owner, enqueue, outputTail: { maxLines: 0, maxBytes: 1 } }),
    ).toThrow(/outputTail\.maxLines/);
    expect(() => createDeliveryPolicy({ tasks, owner, enqueue: 'no' as never })).toThrow(/enqueue/);
  });

  it('rejects unknown option keys, also inside outputTail', () => {
    const { tasks } = serviceForTest();
    const owner = createOwner('s');
    const enqueue = () => {};
    expect(() => createDeliveryPolicy({ tasks, owner, enqueue, wakeBugdet: 1 } as never)).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_OPTION',
        message: 'Unknown option `wakeBugdet` for createDeliveryPolicy (did you mean `wakeBudget`?)',
      }),
    );
    expect(() =>
      createDeliveryPolicy({ tasks, owner, enqueue, outputTail: { maxLines: 5, lines: 5 } } as never),
    ).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_OPTION',
        context: expect.objectContaining({ field: 'outputTail.lines' }),
      }),
    );
  });
});
