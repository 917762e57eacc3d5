import { afterAll, describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createDashboardServer } from './dashboard-server.js';
import { createInMemorySessionDirectory } from './session-directory.js';
import { createTaskServiceBackend } from './task-service-backend.js';

const tasks = createTaskService({ requireController: false });
const sessions = createInMemorySessionDirectory();
const backend = createTaskServiceBackend({ tasks, sessions });

afterAll(async () => {
  backend.dispose();
  await tasks.dispose();
});

describe('unknown option keys of the dashboard server', () => {
  it.each([
    [
      'createDashboardServer',
      () => createDashboardServer({ backend, prot: 8080 } as never),
      'Unknown option `prot` for createDashboardServer (did you mean `port`?)',
    ],
    [
      'createDashboardServer (a singular for a plural)',
      () => createDashboardServer({ backend, allowedOrigin: ['https://x'] } as never),
      'Unknown option `allowedOrigin` for createDashboardServer (did you mean `allowedOrigins`?)',
    ],
    [
      'createTaskServiceBackend',
      () => createTaskServiceBackend({ tasks, sessions, stopReasons: 'x' } as never),
      'Unknown option `stopReasons` for createTaskServiceBackend (did you mean `stopReason`?)',
    ],
    [
      'createTaskServiceBackend feed',
      () => createTaskServiceBackend({ tasks, sessions, feed: { tasks } } as never),
      'Unknown option `feed.tasks` for createTaskServiceBackend; known options: `feed.caller`',
    ],
  ])('%s rejects an unknown key', (_name, create, message) => {
    expect(create).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(create).toThrow(message);
  });
});
