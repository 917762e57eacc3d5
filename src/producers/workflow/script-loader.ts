/**
 * Finds, checks and loads workflow scripts. A script must be an ES module (`.mjs`, or `.js` in an ESM
 * package) inside the configured workflow directory — checked on the real path, so a symlink cannot
 * lead out of it — that exports `default async function (ctx)`. The module is imported under its
 * content hash, so an edited script is loaded afresh rather than served from the module cache.
 */
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { extname, isAbsolute, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WorkflowDirectoryNotConfiguredError, WorkflowScriptError } from './errors.js';
import type { WorkflowFunction } from './workflow-context.js';

/** Extensions a workflow script may have. TypeScript must be compiled first. */
export const WORKFLOW_SCRIPT_EXTENSIONS: readonly string[] = ['.mjs', '.js'];

export interface LocatedScript {
  /** The real, absolute path. */
  readonly path: string;
  /** The path relative to the workflow directory, for labels and the model. */
  readonly name: string;
  /** sha256 of the file's content, hex. */
  readonly hash: string;
}

export interface LoadedScript extends LocatedScript {
  readonly run: WorkflowFunction;
}

/** The real path of the workflow directory, or a clear error when none is configured or it is missing. */
export function resolveDirectory(directory: string | undefined): string {
  if (directory === undefined) throw new WorkflowDirectoryNotConfiguredError();
  try {
    return realpathSync(directory);
  } catch (error) {
    throw new WorkflowScriptError(
      'WORKFLOW_SCRIPT_NOT_FOUND',
      `The workflow directory ${JSON.stringify(directory)} does not exist`,
      directory,
      error,
    );
  }
}

/** Resolves `script` (relative to the directory, or absolute inside it) and reads its hash. */
export function locateScript(directory: string | undefined, script: string): LocatedScript {
  const root = resolveDirectory(directory);
  if (typeof script !== 'string' || script.trim() === '' || script.includes('\0')) {
    throw new WorkflowScriptError(
      'WORKFLOW_SCRIPT_NOT_FOUND',
      'Expected `script` to be a path to a workflow module, got an empty or invalid path',
      String(script),
    );
  }
  const candidate = isAbsolute(script) ? script : resolve(root, script);
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch (error) {
    throw new WorkflowScriptError(
      'WORKFLOW_SCRIPT_NOT_FOUND',
      `No workflow script at ${JSON.stringify(script)} (looked for ${candidate})`,
      script,
      error,
    );
  }
  if (real !== root && !real.startsWith(root.endsWith(sep) ? root : `${root}${sep}`)) {
    throw new WorkflowScriptError(
      'WORKFLOW_SCRIPT_OUTSIDE_DIRECTORY',
      `The workflow script ${JSON.stringify(script)} resolves to ${real}, outside the workflow directory ${root}`,
      script,
    );
  }
  if (!statSync(real).isFile()) {
    throw new WorkflowScriptError(
      'WORKFLOW_SCRIPT_NOT_FOUND',
      `${JSON.stringify(script)} is not a file`,
      script,
    );
  }
  if (!WORKFLOW_SCRIPT_EXTENSIONS.includes(extname(real))) {
    throw new WorkflowScriptError(
      'WORKFLOW_SCRIPT_UNSUPPORTED',
      `Expected \`script\` to be a JavaScript module (${WORKFLOW_SCRIPT_EXTENSIONS.join(', ')}), got ${JSON.stringify(script)}; compile TypeScript first`,
      script,
    );
  }
  const hash = createHash('sha256').update(readFileSync(real)).digest('hex');
  return { path: real, name: relative(root, real), hash };
}

/** Imports a located script and checks that it exports a default function. */
export async function importScript(located: LocatedScript): Promise<LoadedScript> {
  const url = `${pathToFileURL(located.path).href}?sha256=${located.hash}`;
  let module: { default?: unknown };
  try {
    module = (await import(/* @vite-ignore */ url)) as { default?: unknown };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new WorkflowScriptError(
      'WORKFLOW_SCRIPT_INVALID',
      `The workflow script ${JSON.stringify(located.name)} could not be loaded: ${reason}`,
      located.name,
      error,
    );
  }
  if (typeof module.default !== 'function') {
    throw new WorkflowScriptError(
      'WORKFLOW_SCRIPT_INVALID',
      `The workflow script ${JSON.stringify(located.name)} must export \`default async function (ctx)\`; its default export is ${typeof module.default}`,
      located.name,
    );
  }
  return { ...located, run: module.default as WorkflowFunction };
}

/** Locates and imports a script. */
export async function loadScript(directory: string | undefined, script: string): Promise<LoadedScript> {
  return importScript(locateScript(directory, script));
}
