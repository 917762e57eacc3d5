import { afterAll, describe, expect, it } from 'vitest';
import { createTaskService } from '../registry/index.js';
import { createBackgroundEventFeed } from './background-event-feed.js';
import { createBackgroundWorksStore } from './background-works-store.js';

const tasks = createTaskService({ requireController: false });

afterAll(() => tasks.dispose());

describe('unknown option keys of the event feed', () => {
  it('createBackgroundEventFeed rejects an unknown key', () => {
    const create = () => createBackgroundEventFeed({ tasks, ringsize: 10 } as never);
    expect(create).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION', fault: 'caller' }));
    expect(create).toThrow(
      'Unknown option `ringsize` for createBackgroundEventFeed (did you mean `ringSize`?)',
    );
  });

  it('createBackgroundWorksStore rejects an unknown key before subscribing', () => {
    const feed = createBackgroundEventFeed({ tasks });
    let subscribed = 0;
    const counting = {
      ...feed,
      subscribe: (...args: Parameters<typeof feed.subscribe>) => {
        subscribed += 1;
        return feed.subscribe(...args);
      },
    };
    expect(() => createBackgroundWorksStore(counting, { log: {} } as never)).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_OPTION', message: expect.stringContaining('`log`') }),
    );
    expect(subscribed).toBe(0);
    feed.dispose();
  });
});
