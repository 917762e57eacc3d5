/**
 * The runtime's notifications for the person: a notifier on the runtime's event feed, told about its pty
 * programs going quiet at a prompt ("needs input") while they run in the background. Monitor matches
 * reach it from the task tools' monitor hook (errand-runtime.ts).
 */
import type { BackgroundEventFeed } from '../events/index.js';
import {
  createPersonNotifier,
  type PersonNotifier,
  type PersonNotifierOptions,
} from '../notify-person/index.js';
import type { PtyProducer } from '../producers/pty/index.js';
import { createTrustedCaller } from '../tasks/index.js';

const trusted = createTrustedCaller('person-notices');

export interface PersonNotices {
  readonly notifier: PersonNotifier;
  /** Stops the pty watches and the notifier. */
  dispose(): void;
}

export function startPersonNotices(
  options: Omit<PersonNotifierOptions, 'feed'>,
  feed: BackgroundEventFeed,
  pty: PtyProducer | undefined,
): PersonNotices {
  const notifier = createPersonNotifier({ ...options, feed });
  if (pty === undefined) return { notifier, dispose: () => notifier.dispose() };
  const watches = new Map<string, () => void>();
  const stopWatching = (taskId: string) => {
    watches.get(taskId)?.();
    watches.delete(taskId);
  };
  const unsubscribe = feed.subscribe((event) => {
    if (event.type === 'BackgroundTaskStarted' && event.taskKind === 'pty' && !watches.has(event.taskId)) {
      try {
        watches.set(event.taskId, notifier.watchInput(event.taskId, pty.process(event.taskId, trusted)));
      } catch {
        // Ended or forgotten meanwhile.
      }
    } else if (event.type === 'BackgroundTaskCompleted' || event.type === 'BackgroundTaskRemoved') {
      stopWatching(event.taskId);
    }
  });
  return {
    notifier,
    dispose() {
      unsubscribe();
      for (const taskId of [...watches.keys()]) stopWatching(taskId);
      notifier.dispose();
    },
  };
}
