// @ts-check
/**
 * Notifications for the person on the dashboard page: a "Notify me" button that asks the browser's
 * permission when clicked (never on load), a browser notification for each notice the server sends while
 * this tab is in the background, and the "Sent notifications" panel — what every sink (webhook, desktop,
 * this page) did with each notice, from `GET /api/notices`.
 */
import { byId, element, formatStart } from './dom.js';

/**
 * @typedef {{
 *   schemaVersion: number, id: string, event: string, at: number, sessionId: string | null,
 *   task: { id: string, kind: string, taskKind: string, label: string, status: string,
 *     exitCode: number | null },
 *   summary: string, lines: string[]
 * }} Notice
 * @typedef {{ sink: string, target: string, state: string, attempts: number,
 *   httpStatus: number | null, error: string | null }} SentAttempt
 * @typedef {{ notice: Notice, sinks: SentAttempt[] }} SentRecord
 */

/** The title a notice shows under, as the desktop shows it. */
/** @param {Notice} notice */
function titleOf(notice) {
  switch (notice.event) {
    case 'task-failed':
      return `Errand: ${notice.task.id} failed`;
    case 'monitor-match':
      return `Errand: ${notice.task.id} matched`;
    case 'input-needed':
      return `Errand: ${notice.task.id} is waiting for input`;
    default:
      return `Errand: ${notice.task.id} ${notice.task.status}`;
  }
}

/** @param {SentAttempt} attempt */
function describeAttempt(attempt) {
  const tries = attempt.attempts > 1 ? ` after ${attempt.attempts} attempts` : '';
  const why = attempt.error === null ? '' : ` (${attempt.error})`;
  return `${attempt.sink}: ${attempt.state}${tries}${why}`;
}

/**
 * @param {{ api: (path: string) => Promise<Response> }} deps
 */
export function createNoticesView(deps) {
  const button = /** @type {HTMLButtonElement} */ (byId('notify-toggle'));
  const panel = byId('notices');
  const list = byId('notices-list');
  const supported = typeof window.Notification === 'function';
  let enabled = false;
  let refreshing = false;

  function showPermission() {
    if (!enabled || !supported) {
      button.hidden = true;
      return;
    }
    button.hidden = false;
    const permission = Notification.permission;
    button.textContent =
      permission === 'granted'
        ? 'Notifications on'
        : permission === 'denied'
          ? 'Notifications blocked'
          : 'Notify me';
    button.disabled = permission !== 'default';
    button.title =
      permission === 'denied'
        ? 'The browser blocks notifications for this page: allow them in its site settings'
        : 'Show a browser notification when background work ends while this tab is in the background';
  }

  async function refresh() {
    if (refreshing) return;
    refreshing = true;
    try {
      const response = await deps.api('/api/notices');
      if (!response.ok) return;
      /** @type {{ enabled: boolean, sent: SentRecord[] }} */
      const body = await response.json();
      enabled = body.enabled;
      panel.hidden = !enabled;
      showPermission();
      list.replaceChildren(
        ...body.sent.map((record) =>
          element('li', { 'data-notice': record.notice.id, 'data-event': record.notice.event }, [
            element('span', { class: 'meta' }, [formatStart(record.notice.at)]),
            ' ',
            record.notice.summary,
            element('span', { class: 'notice-sinks meta' }, [
              ` — ${record.sinks.map(describeAttempt).join('; ')}`,
            ]),
          ]),
        ),
      );
      byId('notices-empty').hidden = body.sent.length > 0;
    } finally {
      refreshing = false;
    }
  }

  button.addEventListener('click', () => {
    // Asked only here, on the person's click.
    void Notification.requestPermission().then(showPermission, showPermission);
  });

  return {
    refresh,
    /** A notice from the event stream. @param {Notice} notice */
    onNotice(notice) {
      if (supported && document.visibilityState === 'hidden' && Notification.permission === 'granted') {
        const shown = new Notification(titleOf(notice), { body: notice.summary, tag: notice.id });
        shown.addEventListener('click', () => {
          window.focus();
          shown.close();
        });
      }
      void refresh();
    },
  };
}
