/** The in-process provider against the TaskService conformance suite every provider must pass. */
import { describe, it } from 'vitest';
import { describeTaskServiceConformance } from '../testing/index.js';
import { createTaskService } from './local-task-service.js';

describeTaskServiceConformance({ describe, it }, (setup) => ({ tasks: createTaskService(setup) }), {
  name: 'LocalTaskService conformance',
});
