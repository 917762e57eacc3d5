/**
 * Notifications for the person: task ends, failures, monitor matches and "needs input", sent to a signed
 * webhook, the desktop and the dashboard page, with filters, rate limits and a record of what was sent.
 */
export { DESKTOP_PROGRAM, desktopArguments } from './desktop-sink.js';
export { type QuietSource, watchForInput } from './input-watch.js';
export { matchesFilter, type NoticeFilter } from './notice-filter.js';
export {
  type BrowserOptions,
  type DesktopOptions,
  MIN_WEBHOOK_SECRET_LENGTH,
  PERSON_NOTIFIER_DEFAULTS,
  type PersonNotifierOptions,
  personNotifierOptions,
  type WebhookOptions,
} from './notifier-options.js';
export {
  isFailedEnd,
  noticeTitle,
  PERSON_NOTICE_EVENTS,
  PERSON_NOTICE_SCHEMA_VERSION,
  type PersonNotice,
  type PersonNoticeEvent,
  type PersonNoticeTask,
} from './person-notice.js';
export {
  type BrowserNoticeListener,
  createPersonNotifier,
  type PersonNotifier,
  type SinkDescription,
} from './person-notifier.js';
export type { SentAttempt, SentListener, SentRecord, SentState, SinkName } from './sent-log.js';
export {
  signWebhookBody,
  type VerifyWebhookOptions,
  verifyWebhookSignature,
  WEBHOOK_DEFAULT_TOLERANCE_SECONDS,
  WEBHOOK_NOTICE_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  type WebhookVerdict,
} from './webhook-signature.js';
export { backoffDelay, webhookTarget } from './webhook-sink.js';
