/** Validation of subagent requests and the label a subagent task is shown with. */
import { InvalidArgumentError, type Owner } from '../../tasks/index.js';
import { SubagentNeedsSessionError } from './errors.js';

const MAX_LABEL_CHARACTERS = 200;

/** The fields of a request that validation reads. */
export interface RequestFields {
  readonly prompt: unknown;
  readonly owner: Owner | undefined;
  readonly description?: unknown;
  readonly profile?: unknown;
  readonly toolUseId?: unknown;
  readonly cwd?: unknown;
  readonly background?: unknown;
}

export function validateMessage(value: unknown, field = 'message'): asserts value is string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new InvalidArgumentError(field, 'a non-empty string', value);
  }
}

export function validateRequest(request: RequestFields): void {
  if (typeof request !== 'object' || request === null) {
    throw new InvalidArgumentError('request', 'an object', request);
  }
  validateMessage(request.prompt, 'prompt');
  if (typeof request.owner?.sessionId !== 'string') throw new SubagentNeedsSessionError();
  for (const field of ['description', 'profile', 'toolUseId', 'cwd'] as const) {
    if (request[field] !== undefined && typeof request[field] !== 'string') {
      throw new InvalidArgumentError(field, 'a string', request[field]);
    }
  }
  if (request.background !== undefined && typeof request.background !== 'boolean') {
    throw new InvalidArgumentError('background', 'a boolean', request.background);
  }
}

export function labelOf(description: string | undefined, prompt: string): string {
  const source = (description?.trim() || prompt.trim().split('\n', 1)[0] || 'subagent').replace(/\s+/g, ' ');
  return source.length <= MAX_LABEL_CHARACTERS ? source : `${source.slice(0, MAX_LABEL_CHARACTERS - 1)}…`;
}
