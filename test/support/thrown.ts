/** The Errand error an action throws; any other outcome fails the test. */
import { ErrandError } from '../../src/tasks/index.js';

export function thrown(action: () => unknown): ErrandError {
  try {
    action();
  } catch (error) {
    if (ErrandError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a throw');
}
