/**
 * The model-facing workflow tools: `workflow_run(script, input?, description?)`,
 * `workflow_resume(task_id)`, `workflow_amend(task_id, script, input?, keep_finished_steps?)` and
 * `workflow_answer(task_id, answer)`. Runs go to the background at once; their end (and a stall or a
 * question) comes back as a notification. Stopping and reading use the generic task tools.
 */
import { z } from 'zod';
import { InvalidArgumentError } from '../../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../../tasks/options.js';
import {
  type AnyToolDefinition,
  type BackgroundToolValue,
  defineTool,
  describeToolError,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
  toolError,
  toolResult,
} from '../../tools/index.js';
import type { WorkflowProducer } from './workflow-producer.js';

export const WORKFLOW_TOOL_NAMES = Object.freeze({
  run: 'workflow_run',
  resume: 'workflow_resume',
  amend: 'workflow_amend',
  answer: 'workflow_answer',
});

/** The options of `createWorkflowTools`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const workflowToolsOptions = defineOptions('createWorkflowTools', {
  /** The producer the tools start, resume and amend runs on. */
  producer: option.required(option.shaped<WorkflowProducer>('a WorkflowProducer', ['start'])),
});

/** Options of `createWorkflowTools`. */
export type WorkflowToolsOptions = OptionsInput<typeof workflowToolsOptions.rules>;

export interface WorkflowRunInput {
  readonly script: string;
  readonly input?: unknown;
  readonly description?: string | undefined;
}

export interface WorkflowResumeInput {
  readonly task_id: string;
}

export interface WorkflowAmendInput {
  readonly task_id: string;
  readonly script: string;
  readonly input?: unknown;
  readonly keep_finished_steps?: boolean | undefined;
}

export interface WorkflowAnswerInput {
  readonly task_id: string;
  readonly answer: string;
}

export interface WorkflowTools {
  readonly run: ToolDefinition<WorkflowRunInput, BackgroundToolValue>;
  readonly resume: ToolDefinition<WorkflowResumeInput, BackgroundToolValue>;
  readonly amend: ToolDefinition<WorkflowAmendInput, BackgroundToolValue & { readonly superseded: string }>;
  readonly answer: ToolDefinition<WorkflowAnswerInput, { readonly taskId: string }>;
  /** The four definitions, in the order a model should see them. */
  readonly tools: readonly AnyToolDefinition[];
}

const AUTHORING = [
  'A workflow is a JavaScript module (.mjs) exporting `default async function (ctx)`. Its context offers journaled steps — a resumed run returns the stored result of a finished step instead of running it again, so do side effects inside steps and give each step a stable name:',
  '- `await ctx.step(name, async (signal) => value)`: runs once per run; the JSON result is stored.',
  '- `await ctx.bash(command, { name?, cwd?, timeoutMs?, reject? })`: runs a shell command; rejects on a non-zero exit unless `reject: false`; resolves `{ exitCode, output, ... }`.',
  '- `await ctx.agent(prompt, { name?, profile?, description? })`: runs a subagent to its end; resolves `{ text, usage }`.',
  '- `await ctx.sleep(ms)`, `ctx.progress(message)`, `await ctx.input(question)` (waits for workflow_answer), `ctx.args` (the input), `ctx.signal` (aborted when the run is stopped).',
  "The value the function returns is the run's result.",
].join('\n');

function withCaller<Input, Value>(
  run: (
    input: Input,
    context: ToolContext & { readonly caller: NonNullable<ToolContext['caller']> },
  ) => Promise<ToolResult<Value>>,
) {
  return async (input: Input, context: ToolContext): Promise<ToolResult<Value>> => {
    if (context.caller === undefined) {
      return toolError(
        describeToolError(
          new InvalidArgumentError('caller', 'a session (workflow runs belong to a session)', undefined),
        ),
      );
    }
    try {
      return await run(input, { ...context, caller: context.caller });
    } catch (error) {
      return toolError(describeToolError(error));
    }
  };
}

function started(taskId: string, what: string): string {
  return `${what} You will be notified when it ends (or stalls, or asks a question); read it with task_output (task_id "${taskId}"), stop it with task_kill.`;
}

export function createWorkflowTools(options: WorkflowToolsOptions): WorkflowTools {
  const { producer } = workflowToolsOptions.resolve(options);
  const directory = producer.options.directory;
  const where =
    directory === undefined
      ? 'No workflow directory is configured, so no workflow can run.'
      : `Scripts live in ${directory}; give a path relative to it.`;

  const run = defineTool<WorkflowRunInput, BackgroundToolValue>({
    name: WORKFLOW_TOOL_NAMES.run,
    description: `Start a workflow run in the background: a script that runs journaled steps (commands, subagents, waits) and can be resumed or amended. ${where}\n${AUTHORING}`,
    inputSchema: z.strictObject({
      script: z.string().min(1).describe('The workflow script, relative to the workflow directory.'),
      input: z
        .unknown()
        .optional()
        .describe("The run's input (any JSON), available to the script as ctx.args."),
      description: z.string().min(1).max(200).optional().describe('What the run does, in a few words.'),
    }),
    execute: withCaller(async (input, context) => {
      const result = await producer.start({
        script: input.script,
        owner: context.caller,
        ...(input.input === undefined ? {} : { args: input.input }),
        ...(input.description === undefined ? {} : { description: input.description }),
        toolUseId: context.toolCallId,
        ...(context.cwd === undefined ? {} : { cwd: context.cwd }),
        ...(context.env === undefined ? {} : { env: context.env }),
      });
      return toolResult(started(result.runId, `Started workflow run ${result.runId} (${result.script}).`), {
        kind: 'background' as const,
        taskId: result.runId,
      });
    }),
  });

  const resume = defineTool<WorkflowResumeInput, BackgroundToolValue>({
    name: WORKFLOW_TOOL_NAMES.resume,
    description:
      'Resume a workflow run that failed, was stopped, or was interrupted by a restart: same run id, same script, finished steps are not run again. To run a changed script, use workflow_amend. Do not resume a run the user stopped unless the user asks you to.',
    inputSchema: z.strictObject({
      task_id: z.string().min(1).describe('The run id, for example "workflow-2".'),
    }),
    execute: withCaller(async (input, context) => {
      const result = await producer.resume(input.task_id, {
        caller: context.caller,
        toolUseId: context.toolCallId,
        ...(context.cwd === undefined ? {} : { cwd: context.cwd }),
        ...(context.env === undefined ? {} : { env: context.env }),
      });
      return toolResult(
        started(
          result.runId,
          `Resumed workflow run ${result.runId}; finished steps are replayed from its journal.`,
        ),
        {
          kind: 'background' as const,
          taskId: result.runId,
        },
      );
    }),
  });

  const amend = defineTool<WorkflowAmendInput, BackgroundToolValue & { readonly superseded: string }>({
    name: WORKFLOW_TOOL_NAMES.amend,
    description:
      'Replace the script of a workflow run that failed, was stopped, or is still running: a new run supersedes it (the old one is stopped and not reported), carrying over its finished steps unless keep_finished_steps is false.',
    inputSchema: z.strictObject({
      task_id: z.string().min(1).describe('The run to amend, for example "workflow-2".'),
      script: z.string().min(1).describe('The replacement script, relative to the workflow directory.'),
      input: z.unknown().optional().describe("The new run's input. Default: the amended run's input."),
      keep_finished_steps: z
        .boolean()
        .optional()
        .describe('Reuse the results of steps that finished (matched by name). Default true.'),
    }),
    execute: withCaller(async (input, context) => {
      const result = await producer.amend(input.task_id, {
        caller: context.caller,
        script: input.script,
        ...(input.input === undefined ? {} : { args: input.input }),
        ...(input.keep_finished_steps === undefined ? {} : { keepFinishedSteps: input.keep_finished_steps }),
        toolUseId: context.toolCallId,
        ...(context.cwd === undefined ? {} : { cwd: context.cwd }),
        ...(context.env === undefined ? {} : { env: context.env }),
      });
      const carried = result.carriedSteps === 1 ? '1 finished step' : `${result.carriedSteps} finished steps`;
      return toolResult(
        started(
          result.runId,
          `Workflow run ${result.runId} (${result.script}) supersedes ${result.superseded}, with ${carried} carried over. ${result.superseded} is stopped and will not be reported.`,
        ),
        { kind: 'background' as const, taskId: result.runId, superseded: result.superseded },
      );
    }),
  });

  const answer = defineTool<WorkflowAnswerInput, { readonly taskId: string }>({
    name: WORKFLOW_TOOL_NAMES.answer,
    description:
      'Answer the question a workflow run is waiting on (it asked through an "input needed" notification).',
    inputSchema: z.strictObject({
      task_id: z.string().min(1).describe('The run that asked, for example "workflow-2".'),
      answer: z.string().min(1).max(100_000).describe('The answer; the run receives it as text.'),
    }),
    execute: withCaller(async (input, context) => {
      const snapshot = producer.answer(input.task_id, input.answer, context.caller);
      return toolResult(`Answered workflow run ${snapshot.id}; it continues.`, { taskId: snapshot.id });
    }),
  });

  return Object.freeze({
    run,
    resume,
    amend,
    answer,
    tools: Object.freeze([run, resume, amend, answer] as AnyToolDefinition[]),
  });
}
