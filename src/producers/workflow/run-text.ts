/** How a run's results read as text: a string as it is, anything else as JSON. */
import type { JsonValue } from '../../store/index.js';

/** The text a run's result is shown as: a string as it is, anything else as indented JSON. */
export function resultTextOf(result: JsonValue): string {
  return typeof result === 'string' ? result : JSON.stringify(result, null, 2);
}
