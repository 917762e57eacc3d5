/** How a run's errors and results read as text: diagnoses with their stable code, results as JSON. */
import type { JsonValue } from '../../store/index.js';
import { ErrandError } from '../../tasks/index.js';

/** An error as a run's diagnosis: the stable code first when there is one. */
export function describeError(error: unknown): string {
  if (ErrandError.isInstance(error)) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** The text a run's result is shown as: a string as it is, anything else as indented JSON. */
export function resultTextOf(result: JsonValue): string {
  return typeof result === 'string' ? result : JSON.stringify(result, null, 2);
}
