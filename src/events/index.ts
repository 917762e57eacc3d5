/**
 * BackgroundTask* events derived from the task service, the level signal, the backgroundWorks projection,
 * and the rule that says when an ended work's result is pending (from the sessions' ledgers).
 */
export {
  type BackgroundEventFeed,
  type BackgroundEventListener,
  createBackgroundEventFeed,
} from './background-event-feed.js';
export {
  type BackgroundEvent,
  type BackgroundTaskCompleted,
  type BackgroundTaskEvent,
  type BackgroundTaskEventType,
  type BackgroundTaskRemoved,
  type BackgroundTaskStarted,
  type BackgroundTaskUpdated,
  type BackgroundWorksLevel,
  isBackgroundTaskEvent,
  worksLevel,
} from './background-events.js';
export {
  type BackgroundTaskFacts,
  deriveTaskFacts,
  readDetailFacts,
  sameFacts,
  type ViewerFacts,
  type ViewerFactsReader,
} from './background-task-facts.js';
export {
  type BackgroundWork,
  type BackgroundWorkEndState,
  type BackgroundWorkState,
  type BackgroundWorksDelta,
  type BackgroundWorksState,
  backgroundWorkStateOf,
  countBadgeWorks,
  EMPTY_BACKGROUND_WORKS,
  endStateOf,
  hasRunningWork,
  reduceBackgroundWorks,
  reduceWithDelta,
  selectSessionWorks,
  toBackgroundWork,
} from './background-works.js';
export {
  type BackgroundWorksChange,
  type BackgroundWorksListener,
  type BackgroundWorksStore,
  type BackgroundWorksStoreOptions,
  createBackgroundWorksStore,
} from './background-works-store.js';
export {
  BACKGROUND_WORK_KINDS,
  BADGE_WORK_KINDS,
  type BackgroundWorkKind,
  displayKindOf,
} from './display-kind.js';
export { EventRing, type ReplayResult } from './event-ring.js';
export {
  BACKGROUND_EVENT_FEED_DEFAULTS,
  type BackgroundEventFeedOptions,
  backgroundEventFeedOptions,
  type ViewerFactsSampler,
} from './feed-options.js';
export {
  type LedgerChangeListener,
  type NotificationLedgerView,
  queuedNotificationTaskIds,
} from './notification-ledger-view.js';
export {
  isResultPending,
  isSupersededDetail,
  type ResultPendingLedger,
  type ResultPendingTask,
} from './result-pending.js';
export { takeUtf8Tail, type Utf8Tail } from './utf8-tail.js';
