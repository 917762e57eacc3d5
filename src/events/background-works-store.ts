/** The live `backgroundWorks` projection of a feed: current state, selectors, and change subscriptions. */

import type { Disposer } from '../tasks/index.js';
import { consoleLogger } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option } from '../tasks/options.js';
import type { BackgroundEventFeed } from './background-event-feed.js';
import {
  type BackgroundWork,
  type BackgroundWorksDelta,
  type BackgroundWorksState,
  countBadgeWorks,
  EMPTY_BACKGROUND_WORKS,
  hasRunningWork,
  reduceWithDelta,
  selectSessionWorks,
} from './background-works.js';

export interface BackgroundWorksChange extends BackgroundWorksDelta {
  /** The id of the event that caused it. */
  readonly eventId: number;
  readonly state: BackgroundWorksState;
}

export type BackgroundWorksListener = (change: BackgroundWorksChange) => void;

export interface BackgroundWorksStore {
  readonly state: BackgroundWorksState;
  /** A session's works (null: ownerless work), oldest first. */
  sessionWorks(sessionId: string | null): BackgroundWork[];
  /** The work with this id, if it is shown. */
  work(workId: string): BackgroundWork | undefined;
  hasRunningWork(sessionId: string | null): boolean;
  /** Running bash + workflow + subagent works, of one session or of all. */
  badgeCount(sessionId?: string | null): number;
  /** Called once per event that changed something; never for one that did not. */
  subscribe(listener: BackgroundWorksListener): Disposer;
  /** Stops following the feed. Idempotent. */
  dispose(): void;
}

/** The options of `createBackgroundWorksStore`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const backgroundWorksStoreOptions = defineOptions('createBackgroundWorksStore', {
  /** Told about a listener that throws. Default: the console logger. */
  logger: option.logger({ default: consoleLogger }),
});

/** Options of `createBackgroundWorksStore`. */
export type BackgroundWorksStoreOptions = OptionsInput<typeof backgroundWorksStoreOptions.rules>;

export function createBackgroundWorksStore(
  feed: BackgroundEventFeed,
  options: BackgroundWorksStoreOptions = {},
): BackgroundWorksStore {
  const { logger } = backgroundWorksStoreOptions.resolve(options);
  const listeners = new Set<BackgroundWorksListener>();
  let state = reduceWithDelta(EMPTY_BACKGROUND_WORKS, feed.level()).state;
  const unsubscribe = feed.subscribe((event) => {
    const result = reduceWithDelta(state, event);
    if (result.delta === undefined) return;
    state = result.state;
    const change: BackgroundWorksChange = Object.freeze({ ...result.delta, eventId: event.id, state });
    for (const listener of [...listeners]) {
      try {
        listener(change);
      } catch (error) {
        logger.warn('a background works listener failed', {
          eventId: event.id,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
  });
  return {
    get state() {
      return state;
    },
    sessionWorks: (sessionId) => selectSessionWorks(state, sessionId),
    work: (workId) => state.works.get(workId),
    hasRunningWork: (sessionId) => hasRunningWork(state, sessionId),
    badgeCount: (sessionId) => countBadgeWorks(state, sessionId),
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    dispose() {
      unsubscribe();
      listeners.clear();
    },
  };
}
