// @ts-check
/**
 * The Errand dashboard page: sessions in the order a person looks for them (running work first, the
 * server's own selected, ended ones collapsed), a badge of running work, a status panel with Stop and a
 * confirmed Stop all, a live output view, and the session's conversation with a card per tool call.
 * Live over server-sent events; no framework, no inline code (the page's CSP allows only its own files).
 */
import { createConversationView } from './conversation.js';
import { byId, element, errorText, formatBytes, formatStart, shortPath } from './dom.js';
import { createNoticesView } from './notices.js';

/**
 * @typedef {'running' | 'resultPending' | 'completed' | 'failed' | 'cancelled'} WorkState
 * @typedef {{
 *   workId: string, sessionId: string | null, kind: string, taskKind: string, label: string,
 *   toolUseId: string | null,
 *   state: WorkState, endState: 'completed' | 'failed' | 'cancelled' | null, status: string,
 *   cancellable: boolean, startedAt: number, endedAt: number | null,
 *   cancelRequestedAt: number | null, pid: number | null, outputBytes: number | null, tail: string | null,
 *   exitCode: number | null, signal: string | null, error: string | null, sandbox?: string | null,
 *   limits?: string | null, schedule?: ScheduleProgress | null
 * }} BackgroundWork
 * @typedef {{
 *   when: string, fired: number, times: number, nextAt: number | null, missed: 'run_once' | 'skip'
 * }} ScheduleProgress
 * @typedef {{
 *   id: string, title: string | null, parentId: string | null, createdAt: number | null, cwd: string | null,
 *   firstUserMessage: string | null, live: boolean, own: boolean, pid: number | null,
 *   hasRunningWork: boolean, badgeCount: number, runningElsewhere: number, group: SessionGroup
 * }} Session
 * @typedef {'running' | 'live' | 'ended'} SessionGroup
 * @typedef {{ taskId: string, sessionId: string | null, work: BackgroundWork | null }} TaskEventData
 * @typedef {{ scope: 'all' | 'session', sessionId: string | null, works: BackgroundWork[] }} LevelData
 */

/** Kinds the badge counts. */
const BADGE_KINDS = new Set(['bash', 'subagent', 'workflow']);
/** Session list refreshes are coalesced over this window. */
const SESSIONS_REFRESH_MS = 250;
/** The session list is read again this often: other processes' sessions have no events here. */
const SESSIONS_POLL_MS = 3000;
/** Order of the session groups in the list. */
const GROUP_ORDER = /** @type {const} */ ({ running: 0, live: 1, ended: 2 });

const STATE_LABELS = /** @type {const} */ ({
  running: 'running',
  resultPending: 'result pending',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
});

/** How an ended work ended (its `endState`): what a pending result's details start with. */
const ENDED_AS = /** @type {const} */ ({
  completed: 'completed',
  failed: 'failed',
  cancelled: 'stopped',
});

const token = new URLSearchParams(window.location.search).get('token') ?? '';

/** @type {Map<string, BackgroundWork>} */
const works = new Map();
/** @type {Session[]} */
let sessions = [];
/** Sessions the server counted but did not list (beyond its `maxListedSessions`). */
let omittedSessions = 0;
/** @type {string | null} */
let selectedSessionId = null;
/** A person chose the session: it stays selected while it exists. */
let selectedByPerson = false;
/** Stop all sent and not yet answered. */
let stoppingAll = false;
/** Errors to show on a row (a rejected stop). @type {Map<string, string>} */
const rowErrors = new Map();
/** Stops sent and not yet answered. @type {Set<string>} */
const pendingStops = new Set();
/** @type {Map<string, HTMLTableRowElement>} */
const rows = new Map();
/** @type {Map<string, HTMLElement>} */
const sessionItems = new Map();

/** @type {number | undefined} */
let sessionsTimer;

// ------------------------------------------------------------------ API

/**
 * @param {string} path
 * @param {RequestInit} [init]
 */
function api(path, init = {}) {
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${token}`);
  return fetch(path, { ...init, headers, cache: 'no-store' });
}

async function loadSessions() {
  const response = await api('/api/sessions');
  if (!response.ok) {
    showFatal(`Could not load sessions: ${await errorText(response)}`);
    return;
  }
  const body = await response.json();
  sessions = body.sessions;
  omittedSessions = typeof body.omitted === 'number' ? body.omitted : 0;
  chooseSession();
  render();
}

/**
 * The group a session shows in, from what the page sees live: its running work, or other processes'.
 * @param {Session} session
 * @returns {SessionGroup}
 */
function groupOf(session) {
  if (session.runningElsewhere > 0) return 'running';
  for (const work of works.values()) {
    if (work.sessionId === session.id && work.state === 'running') return 'running';
  }
  return session.live ? 'live' : 'ended';
}

/** Running first, then live, then ended; newest first within a group (the server's order, kept live). */
function orderedSessions() {
  const groups = new Map(sessions.map((session) => [session.id, groupOf(session)]));
  return [...sessions].sort(
    (left, right) =>
      GROUP_ORDER[/** @type {SessionGroup} */ (groups.get(left.id))] -
        GROUP_ORDER[/** @type {SessionGroup} */ (groups.get(right.id))] ||
      (right.createdAt ?? 0) - (left.createdAt ?? 0) ||
      (left.id < right.id ? -1 : left.id > right.id ? 1 : 0),
  );
}

/**
 * Until a person picks one: the server's own session with running work, else its own newest, else the
 * first in the list (running work on top). A choice made stays while the session exists.
 */
function chooseSession() {
  const current = sessions.find((session) => session.id === selectedSessionId);
  // A choice stays: the person's, and one made here unless the server's own session has appeared since.
  if (
    current !== undefined &&
    (selectedByPerson || current.own || !sessions.some((session) => session.own))
  ) {
    return;
  }
  selectedByPerson = false;
  const ordered = orderedSessions();
  const pick =
    ordered.find((session) => session.own && groupOf(session) === 'running') ??
    ordered.find((session) => session.own) ??
    ordered[0];
  selectedSessionId = pick?.id ?? null;
}

/**
 * What a person recognises a session by: what they wrote first, else its client, else its id.
 * @param {Session} session
 */
function sessionName(session) {
  return session.firstUserMessage ?? session.title ?? session.id;
}

/**
 * The line under the name: the client (when the name is a message), the start time, the directory.
 * @param {Session} session
 */
function sessionDetails(session) {
  const parts = [];
  if (session.firstUserMessage !== null && session.title !== null) parts.push(session.title);
  if (session.createdAt !== null) parts.push(`started ${formatStart(session.createdAt)}`);
  if (session.cwd !== null) parts.push(shortPath(session.cwd));
  return parts.join(' · ');
}

function scheduleSessionsRefresh() {
  if (sessionsTimer !== undefined) return;
  sessionsTimer = window.setTimeout(() => {
    sessionsTimer = undefined;
    void loadSessions();
  }, SESSIONS_REFRESH_MS);
}

/** @param {string} sessionId */
async function stopAll(sessionId) {
  stoppingAll = true;
  hideStopAllConfirm(false);
  const error = byId('panel-error');
  error.hidden = true;
  render();
  try {
    const response = await api('/api/commands', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'stopAllBackgroundWork', sessionId }),
    });
    const body = await response.json().catch(() => ({}));
    const stopped = Array.isArray(body.stopped) ? body.stopped.length : 0;
    const refused = (body.rejected?.length ?? 0) + (body.failed?.length ?? 0);
    if (!response.ok || body.ok !== true) {
      const reason = body.fault ?? body.error?.code ?? `HTTP ${response.status}`;
      error.hidden = false;
      error.textContent = `Stop all: ${body.message ?? 'nothing was cancelled'} (${reason})`;
    }
    byId('panel-status').textContent =
      stopped === 0
        ? ''
        : `Stop requested for ${stopped} ${stopped === 1 ? 'work' : 'works'}${refused > 0 ? `; ${refused} not stopped` : ''}.`;
  } catch (failure) {
    error.hidden = false;
    error.textContent = `Stop all failed: ${failure instanceof Error ? failure.message : String(failure)}`;
  } finally {
    stoppingAll = false;
    render();
  }
}

/** @param {number} count */
function showStopAllConfirm(count) {
  byId('stop-all-question').textContent =
    `Stop ${count} running ${count === 1 ? 'work' : 'works'} of this session?`;
  byId('stop-all').hidden = true;
  byId('stop-all-confirm').hidden = false;
  byId('stop-all-yes').focus();
}

/** @param {boolean} restoreFocus */
function hideStopAllConfirm(restoreFocus) {
  const confirm = byId('stop-all-confirm');
  if (confirm.hidden) return;
  confirm.hidden = true;
  renderStopAll();
  if (restoreFocus) byId('stop-all').focus();
}

/** @param {string} workId */
async function stopWork(workId) {
  pendingStops.add(workId);
  rowErrors.delete(workId);
  render();
  try {
    const response = await api('/api/commands', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'cancelBackgroundWork', workId }),
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok || body.ok !== true) {
      const reason = body.fault ?? body.error?.code ?? `HTTP ${response.status}`;
      rowErrors.set(workId, `Stop rejected: ${body.message ?? 'nothing was cancelled'} (${reason})`);
    }
  } catch (error) {
    rowErrors.set(workId, `Stop failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    pendingStops.delete(workId);
    render();
  }
}

// ------------------------------------------------------------------ live events

function connect() {
  const source = new EventSource(`/api/events?token=${encodeURIComponent(token)}`);
  const status = byId('connection');
  let opened = false;
  source.addEventListener('open', () => {
    status.textContent = 'Live';
    // After a reconnect the session list may have changed too.
    if (opened) void loadSessions();
    opened = true;
  });
  source.addEventListener('error', () => {
    if (source.readyState === EventSource.CLOSED) {
      // Refused outright (a wrong token, too many open pages, a server gone for good): the browser will
      // not retry. Ask once more to learn why.
      status.textContent = 'Disconnected';
      void explainRefusal();
    } else {
      status.textContent = 'Reconnecting…';
    }
  });
  source.addEventListener('reset', () => {
    // A level follows; until then nothing we hold can be trusted.
    works.clear();
  });
  source.addEventListener('notice', (event) => {
    notices.onNotice(JSON.parse(/** @type {MessageEvent} */ (event).data));
  });
  source.addEventListener('BackgroundWorksLevel', (event) => {
    applyLevel(/** @type {LevelData} */ (JSON.parse(/** @type {MessageEvent} */ (event).data)));
  });
  for (const type of [
    'BackgroundTaskStarted',
    'BackgroundTaskUpdated',
    'BackgroundTaskCompleted',
    'BackgroundTaskRemoved',
  ]) {
    source.addEventListener(type, (event) => {
      applyTaskEvent(/** @type {TaskEventData} */ (JSON.parse(/** @type {MessageEvent} */ (event).data)));
    });
  }
}

/** Shows why the event stream was refused, in the server's words, or reconnects when it no longer is. */
async function explainRefusal() {
  const probe = new AbortController();
  try {
    const response = await api('/api/events', { signal: probe.signal });
    if (response.ok) {
      probe.abort();
      connect();
      return;
    }
    showFatal(`The live event stream was refused: ${await errorText(response)}`);
  } catch {
    showFatal('The live event stream was refused. Reload the page, or open the URL errand printed.');
  }
}

/** @param {LevelData} level */
function applyLevel(level) {
  for (const [workId, work] of works) {
    if (level.scope === 'all' || work.sessionId === level.sessionId) works.delete(workId);
  }
  for (const work of level.works) works.set(work.workId, work);
  noteUnknownSessions(level.works);
  render();
  if (outputView !== null) refreshOutputSoon();
}

/** @param {TaskEventData} data */
function applyTaskEvent(data) {
  if (data.work === null) {
    works.delete(data.taskId);
  } else {
    works.set(data.taskId, data.work);
    noteUnknownSessions([data.work]);
  }
  render();
  if (outputView?.workId === data.taskId) refreshOutputSoon();
  if (data.sessionId === selectedSessionId) conversation.refreshSoon();
}

/** @param {BackgroundWork[]} list */
function noteUnknownSessions(list) {
  for (const work of list) {
    if (work.sessionId !== null && !sessions.some((session) => session.id === work.sessionId)) {
      scheduleSessionsRefresh();
      return;
    }
  }
}

// ------------------------------------------------------------------ rendering

function render() {
  chooseSession();
  renderBadge();
  renderSessions();
  renderWorks();
  renderStopAll();
  renderOutputMeta();
  if (selectedSessionId === null) conversation.hide();
  else conversation.show(selectedSessionId);
  conversation.render();
}

/** @param {BackgroundWork} work */
function countsForBadge(work) {
  return work.state === 'running' && BADGE_KINDS.has(work.kind);
}

function renderBadge() {
  const badge = byId('badge');
  let count = 0;
  for (const work of works.values()) if (countsForBadge(work)) count += 1;
  badge.hidden = count === 0;
  badge.textContent = `${count} running`;
  badge.setAttribute('aria-label', `${count} background ${count === 1 ? 'work' : 'works'} running`);
}

function renderSessions() {
  // Reordering may move the focused entry; it gets its focus back below.
  const focused = document.activeElement;
  const open = byId('sessions');
  const ended = byId('sessions-ended');
  byId('no-sessions').hidden = sessions.length > 0;
  const keep = new Set(sessions.map((session) => session.id));
  for (const [sessionId, item] of sessionItems) {
    if (!keep.has(sessionId)) {
      item.remove();
      sessionItems.delete(sessionId);
    }
  }
  let openIndex = 0;
  let endedIndex = 0;
  for (const session of orderedSessions()) {
    let item = sessionItems.get(session.id);
    if (item === undefined) {
      item = createSessionItem(session.id);
      sessionItems.set(session.id, item);
    }
    const group = groupOf(session);
    updateSessionItem(item, session, group);
    if (group === 'ended') placeAt(ended, item, endedIndex++);
    else placeAt(open, item, openIndex++);
  }
  const details = /** @type {HTMLDetailsElement} */ (byId('ended'));
  details.hidden = endedIndex === 0;
  byId('ended-summary').textContent = `Ended sessions (${endedIndex})`;
  const omitted = byId('sessions-omitted');
  omitted.hidden = omittedSessions === 0;
  omitted.textContent = `${omittedSessions} older ${omittedSessions === 1 ? 'session' : 'sessions'} not listed`;
  // The selected session is never hidden in a closed group.
  const selected =
    selectedSessionId === null ? undefined : sessions.find((session) => session.id === selectedSessionId);
  if (selected !== undefined && groupOf(selected) === 'ended') details.open = true;
  if (focused instanceof HTMLElement && focused !== document.activeElement && focused.isConnected) {
    focused.focus({ preventScroll: true });
  }
}

/** @param {string} sessionId */
function createSessionItem(sessionId) {
  const button = element('button', { type: 'button', class: 'session', 'data-session-id': sessionId }, [
    element('span', { class: 'marker', 'aria-hidden': 'true' }),
    element('span', { class: 'label' }, [
      element('span', { class: 'name' }),
      element('span', { class: 'details' }),
    ]),
    element('span', { class: 'count', 'aria-hidden': 'true' }),
  ]);
  button.addEventListener('click', () => selectSession(sessionId));
  button.addEventListener('keydown', (event) => moveSessionFocus(event, button));
  return element('li', {}, [button]);
}

/**
 * Updates a session entry in place, so keyboard focus stays where it is.
 * @param {HTMLElement} item
 * @param {Session} session
 * @param {SessionGroup} group
 */
function updateSessionItem(item, session, group) {
  let running = session.runningElsewhere;
  for (const work of works.values()) {
    if (work.sessionId === session.id && countsForBadge(work)) running += 1;
  }
  const active = group === 'running';
  const name = sessionName(session);
  const details = sessionDetails(session);
  const button = /** @type {HTMLElement} */ (item.firstElementChild);
  button.className = active ? 'session active' : 'session';
  button.setAttribute('data-group', group);
  button.setAttribute('data-own', String(session.own));
  button.setAttribute('aria-current', String(session.id === selectedSessionId));
  button.setAttribute(
    'aria-label',
    `${name}${active ? `, ${running} running` : ''}${group === 'ended' ? ', ended' : ''}`,
  );
  button.title = [name, details, session.cwd ?? ''].filter((part) => part !== '').join('\n');
  const nameSpan = button.querySelector('.name');
  const detailsSpan = button.querySelector('.details');
  const countSpan = button.querySelector('.count');
  if (nameSpan) nameSpan.textContent = name;
  if (detailsSpan) detailsSpan.textContent = details;
  if (countSpan) countSpan.textContent = running > 0 ? String(running) : '';
}

/**
 * Moves `child` to position `index` of `parent` only when it is elsewhere: moving a focused element
 * would drop its focus.
 * @param {HTMLElement} parent
 * @param {HTMLElement} child
 * @param {number} index
 */
function placeAt(parent, child, index) {
  if (parent.children[index] !== child) parent.insertBefore(child, parent.children[index] ?? null);
}

/**
 * @param {KeyboardEvent} event
 * @param {HTMLElement} button
 */
function moveSessionFocus(event, button) {
  const buttons = /** @type {HTMLElement[]} */ (
    [...byId('sessions-pane').querySelectorAll('button.session')].filter(
      (candidate) => candidate instanceof HTMLElement && candidate.offsetParent !== null,
    )
  );
  const index = buttons.indexOf(button);
  /** @type {number | undefined} */
  let target;
  if (event.key === 'ArrowDown') target = Math.min(index + 1, buttons.length - 1);
  else if (event.key === 'ArrowUp') target = Math.max(index - 1, 0);
  else if (event.key === 'Home') target = 0;
  else if (event.key === 'End') target = buttons.length - 1;
  if (target === undefined) return;
  event.preventDefault();
  buttons[target]?.focus();
}

/** @param {string} sessionId */
function selectSession(sessionId) {
  if (selectedSessionId !== sessionId) {
    byId('panel-status').textContent = '';
    byId('panel-error').hidden = true;
    hideStopAllConfirm(false);
  }
  selectedSessionId = sessionId;
  selectedByPerson = true;
  render();
}

function sessionWorks() {
  return [...works.values()]
    .filter((work) => work.sessionId === selectedSessionId)
    .sort((left, right) => left.startedAt - right.startedAt);
}

/** @param {BackgroundWork} work */
function detailsOf(work) {
  const parts = [];
  // The state says the model is not told yet; how the work ended is said here.
  if (work.state === 'resultPending' && work.endState !== null) parts.push(ENDED_AS[work.endState]);
  if (work.pid !== null) parts.push(`pid ${work.pid}`);
  if (work.outputBytes !== null) parts.push(formatBytes(work.outputBytes));
  if (work.exitCode !== null) parts.push(`exit code ${work.exitCode}`);
  if (work.signal !== null) parts.push(work.signal);
  if (work.error !== null) parts.push(work.error);
  if (work.sandbox) parts.push(`sandbox ${work.sandbox}`);
  if (work.limits) parts.push(`limits ${work.limits}`);
  if (work.schedule) parts.push(...scheduleDetails(work.schedule, work.state === 'running'));
  return parts.join(' · ');
}

/**
 * A schedule's row details: when it fires, its firings, the next due time (local), the missed-firing policy.
 * @param {ScheduleProgress} schedule
 * @param {boolean} running
 */
function scheduleDetails(schedule, running) {
  const parts = [schedule.when, `fired ${schedule.fired} of ${schedule.times}`];
  if (running && schedule.nextAt !== null) {
    parts.push(`next due ${new Date(schedule.nextAt).toLocaleString()}`);
  }
  if (running) parts.push(`missed firings: ${schedule.missed === 'skip' ? 'skip' : 'run once'}`);
  return parts;
}

function renderWorks() {
  const table = byId('works');
  const body = byId('works-body');
  const empty = byId('panel-empty');
  const list = sessionWorks();
  const session = sessions.find((candidate) => candidate.id === selectedSessionId);
  byId('panel-heading').textContent =
    session === undefined ? 'Background work' : `Background work of ${sessionName(session)}`;
  byId('panel-meta').textContent =
    session === undefined
      ? ''
      : [
          sessionDetails(session),
          session.live && session.pid !== null ? `process ${session.pid}` : session.live ? '' : 'ended',
        ]
          .filter((part) => part !== '')
          .join(' · ');
  table.hidden = list.length === 0;
  empty.hidden = list.length > 0;
  empty.textContent =
    selectedSessionId === null
      ? 'Select a session to see its background work.'
      : session !== undefined && session.runningElsewhere > 0
        ? `This session runs in another process${session.pid === null ? '' : ` (${session.pid})`}: its ${session.runningElsewhere} running ${session.runningElsewhere === 1 ? 'work is' : 'works are'} shown by errand serve.`
        : 'No background work.';

  const keep = new Set(list.map((work) => work.workId));
  for (const [workId, row] of rows) {
    if (!keep.has(workId)) {
      row.remove();
      rows.delete(workId);
    }
  }
  list.forEach((work, index) => {
    let row = rows.get(work.workId);
    if (row === undefined) {
      row = /** @type {HTMLTableRowElement} */ (element('tr', { 'data-work-id': work.workId }));
      rows.set(work.workId, row);
    }
    updateRow(row, work);
    placeAt(body, row, index);
  });
}

/** Stop all: offered while the selected session has running work the page can stop. */
function renderStopAll() {
  const button = /** @type {HTMLButtonElement} */ (byId('stop-all'));
  const confirming = !byId('stop-all-confirm').hidden;
  const running = sessionWorks().filter((work) => work.state === 'running').length;
  if (running === 0 && confirming) byId('stop-all-confirm').hidden = true;
  button.hidden = running === 0 || !byId('stop-all-confirm').hidden;
  button.disabled = stoppingAll;
  button.textContent = stoppingAll ? 'Stopping all…' : 'Stop all';
  button.setAttribute('aria-label', `Stop all ${running} running works of this session`);
}

/**
 * Updates a row in place, so a focused button keeps its focus across updates.
 * @param {HTMLTableRowElement} row
 * @param {BackgroundWork} work
 */
function updateRow(row, work) {
  if (row.cells.length === 0) {
    for (const name of ['work', 'kind', 'state', 'details', 'actions'])
      row.append(element('td', { 'data-cell': name }));
  }
  const [workCell, kindCell, stateCell, detailsCell, actionsCell] = /** @type {HTMLTableCellElement[]} */ ([
    ...row.cells,
  ]);
  if (!workCell || !kindCell || !stateCell || !detailsCell || !actionsCell) return;
  workCell.replaceChildren(work.label, element('span', { class: 'work-id' }, [work.workId]));
  kindCell.textContent = work.kind;
  stateCell.className = `state-${work.state}`;
  stateCell.textContent = work.status === 'stopping' ? 'stopping…' : STATE_LABELS[work.state];
  stateCell.setAttribute('data-state', work.state);
  detailsCell.textContent = detailsOf(work);

  let actions = actionsCell.querySelector('.actions');
  if (actions === null) {
    actions = element('div', { class: 'actions' });
    actionsCell.append(actions);
  }
  const canStop = work.state === 'running' && work.cancellable;
  let stop = /** @type {HTMLButtonElement | null} */ (actions.querySelector('button.stop'));
  if (canStop && stop === null) {
    stop = /** @type {HTMLButtonElement} */ (element('button', { type: 'button', class: 'stop' }, ['Stop']));
    stop.addEventListener('click', () => void stopWork(work.workId));
    actions.prepend(stop);
  } else if (!canStop && stop !== null) {
    stop.remove();
    stop = null;
  }
  if (stop !== null) {
    stop.disabled = pendingStops.has(work.workId);
    stop.textContent = pendingStops.has(work.workId) ? 'Stopping…' : 'Stop';
    stop.setAttribute('aria-label', `Stop ${work.label}`);
  }
  let view = /** @type {HTMLButtonElement | null} */ (actions.querySelector('button.view-output'));
  if (work.kind === 'bash' && view === null) {
    view = /** @type {HTMLButtonElement} */ (
      element('button', { type: 'button', class: 'view-output', 'aria-label': `Output of ${work.label}` }, [
        'Output',
      ])
    );
    view.addEventListener('click', () => openOutput(work.workId));
    actions.append(view);
  }

  const message = rowErrors.get(work.workId);
  let error = actionsCell.querySelector('.row-error');
  if (message === undefined) {
    error?.remove();
  } else {
    if (error === null) {
      error = element('p', { class: 'row-error', role: 'alert' });
      actionsCell.append(error);
    }
    error.textContent = message;
  }
}

// ------------------------------------------------------------------ output view

/**
 * The output view follows a work live: it opens the output stream on the newest bytes and appends what
 * comes, and "Earlier output" pages back through what the output file holds. A backend without live
 * readers gets the snapshot, refetched as the work changes.
 */

/** The newest bytes the view starts with, and the size of one page back. */
const OUTPUT_PAGE_BYTES = 65536;
/** The most characters the view holds; beyond it the oldest leave (and can be paged back in). */
const OUTPUT_HELD_MAX_CHARS = 2 * 1024 * 1024;
/** The snapshot view refetches at most this often when events arrive for its work. */
const OUTPUT_REFRESH_MIN_MS = 1000;
/** While its work runs, the snapshot view also polls this often: not every producer reports byte counts. */
const OUTPUT_POLL_MS = 2000;

/**
 * @typedef {{ from: number, next: number, node: Text }} OutputChunk
 * @typedef {{
 *   workId: string, mode: 'live' | 'snapshot', source: EventSource | null, received: boolean,
 *   chunks: OutputChunk[], heldChars: number, first: number | null, next: number, end: number,
 *   ended: boolean, loadingEarlier: boolean,
 *   lastFetch: number, timer: number | undefined, poll: number | undefined
 * }} OutputView
 */

/** @type {OutputView | null} */
let outputView = null;
let outputToolsWired = false;

/** @param {string} workId */
function outputPath(workId) {
  return `/api/background-works/${encodeURIComponent(workId)}/output`;
}

/** @param {string} workId */
function openOutput(workId) {
  closeOutput(false);
  wireOutputTools();
  /** @type {OutputView} */
  const view = {
    workId,
    mode: 'live',
    source: null,
    received: false,
    chunks: [],
    heldChars: 0,
    first: null,
    next: 0,
    end: 0,
    ended: false,
    loadingEarlier: false,
    lastFetch: 0,
    timer: undefined,
    poll: undefined,
  };
  outputView = view;
  byId('output').hidden = false;
  byId('output-work').textContent = works.get(workId)?.label ?? workId;
  byId('output-text').textContent = '';
  byId('output-error').hidden = true;
  byId('output-meta').textContent = '';
  followOutput(view);
  renderOutputTools();
  byId('output-refresh').focus();
}

/** The "Earlier output" button is this view's own: wired once, on first use. */
function wireOutputTools() {
  if (outputToolsWired) return;
  outputToolsWired = true;
  byId('output-earlier').addEventListener('click', () => void loadEarlierOutput());
}

/** @param {OutputView} view */
function followOutput(view) {
  const query = `tailBytes=${OUTPUT_PAGE_BYTES}&token=${encodeURIComponent(token)}`;
  const source = new EventSource(`${outputPath(view.workId)}/stream?${query}`);
  view.source = source;
  source.addEventListener('output', (event) => {
    if (outputView !== view) return;
    view.received = true;
    byId('output-error').hidden = true;
    appendOutput(view, JSON.parse(/** @type {MessageEvent} */ (event).data));
  });
  source.addEventListener('end', () => {
    if (outputView !== view) return;
    view.ended = true;
    source.close();
    renderOutputTools();
  });
  source.addEventListener('error', () => {
    if (outputView !== view || source.readyState !== EventSource.CLOSED || view.ended) return;
    // Refused (no live reader for this work): show the snapshot instead. A dropped stream reconnects
    // by itself, resuming after the last offset it received.
    if (!view.received) {
      view.mode = 'snapshot';
      view.source = null;
      startSnapshot(view);
    } else {
      const error = byId('output-error');
      error.hidden = false;
      error.textContent = 'The live output stream closed; Refresh reconnects.';
    }
  });
}

/**
 * @param {OutputView} view
 * @param {{ text: string, from: number, next: number, end: number }} page
 */
function appendOutput(view, page) {
  const text = byId('output-text');
  const atBottom = text.scrollTop + text.clientHeight >= text.scrollHeight - 4;
  if (view.first === null) view.first = page.from;
  const node = document.createTextNode(page.text);
  text.append(node);
  view.chunks.push({ from: page.from, next: page.next, node });
  view.heldChars += page.text.length;
  view.next = page.next;
  view.end = Math.max(view.end, page.end, page.next);
  // Bounded: the oldest held output leaves first; Earlier output brings it back.
  while (view.heldChars > OUTPUT_HELD_MAX_CHARS && view.chunks.length > 1) {
    const oldest = /** @type {OutputChunk} */ (view.chunks.shift());
    oldest.node.remove();
    view.heldChars -= oldest.node.data.length;
    view.first = view.chunks[0]?.from ?? view.next;
  }
  if (atBottom) text.scrollTop = text.scrollHeight;
  renderOutputTools();
}

/** Pages back one page before the oldest byte the view holds, keeping what is on screen in place. */
async function loadEarlierOutput() {
  const view = outputView;
  if (view === null || view.first === null || view.first === 0 || view.loadingEarlier) return;
  if (view.heldChars >= OUTPUT_HELD_MAX_CHARS) return;
  view.loadingEarlier = true;
  renderOutputTools();
  const until = view.first;
  const from = Math.max(0, until - OUTPUT_PAGE_BYTES);
  try {
    const response = await api(
      `${outputPath(view.workId)}?from=${from}&maxBytes=${Math.max(4, until - from)}`,
    );
    if (outputView !== view) return;
    if (!response.ok) throw new Error(await errorText(response));
    /** @type {{ text: string, from: number, next: number }} */
    const page = await response.json();
    if (outputView !== view || view.first !== until) return;
    const text = byId('output-text');
    const height = text.scrollHeight;
    const node = document.createTextNode(page.text);
    text.insertBefore(node, text.firstChild);
    view.chunks.unshift({ from: page.from, next: page.next, node });
    view.heldChars += page.text.length;
    view.first = page.from;
    // The lines that were on screen stay there: only the new ones above are added.
    text.scrollTop += text.scrollHeight - height;
  } catch (error) {
    const line = byId('output-error');
    line.hidden = false;
    line.textContent = `Earlier output unavailable: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    view.loadingEarlier = false;
    if (outputView === view) renderOutputTools();
  }
}

function renderOutputTools() {
  const view = outputView;
  if (view === null) return;
  const earlier = /** @type {HTMLButtonElement} */ (byId('output-earlier'));
  const live = view.mode === 'live';
  earlier.hidden = !live;
  // A load in progress does not disable it (its click is ignored): focus stays on it between pages.
  const nothingEarlier = view.first === null || view.first === 0 || view.heldChars >= OUTPUT_HELD_MAX_CHARS;
  const focused = document.activeElement === earlier;
  earlier.disabled = nothingEarlier;
  earlier.setAttribute('aria-busy', String(view.loadingEarlier));
  // A button that turns disabled drops its focus: hand it to Refresh, inside the view.
  if (focused && nothingEarlier) byId('output-refresh').focus();
  if (!live) return;
  const held = view.first === null ? 0 : view.next - view.first;
  const state = view.ended ? 'ended' : 'live';
  byId('output-meta').textContent =
    view.first === null
      ? state
      : `${formatBytes(held)} shown, bytes ${view.first}–${view.next} of ${formatBytes(view.end)} · ${state}`;
  byId('output').setAttribute('data-first-offset', String(view.first ?? 0));
  byId('output').setAttribute('data-loaded-bytes', String(held));
}

/** @param {OutputView} view */
function startSnapshot(view) {
  view.poll = window.setInterval(() => {
    if (outputView === view && works.get(view.workId)?.state === 'running') void fetchSnapshot(view);
  }, OUTPUT_POLL_MS);
  renderOutputTools();
  void fetchSnapshot(view);
}

/** @param {boolean} restoreFocus */
function closeOutput(restoreFocus) {
  if (outputView === null) return;
  const { workId } = outputView;
  outputView.source?.close();
  window.clearTimeout(outputView.timer);
  window.clearInterval(outputView.poll);
  outputView = null;
  byId('output').hidden = true;
  if (restoreFocus) {
    const button = rows.get(workId)?.querySelector('button.view-output');
    if (button instanceof HTMLElement) button.focus();
  }
}

/** Refetches the snapshot (snapshot views only), at most once per OUTPUT_REFRESH_MIN_MS. */
function refreshOutputSoon() {
  const view = outputView;
  if (view === null || view.mode !== 'snapshot' || view.timer !== undefined) return;
  const wait = Math.max(0, view.lastFetch + OUTPUT_REFRESH_MIN_MS - Date.now());
  view.timer = window.setTimeout(() => {
    view.timer = undefined;
    void fetchSnapshot(view);
  }, wait);
}

/** The Refresh button: reconnects a live view from scratch, refetches a snapshot view. */
async function fetchOutput() {
  const view = outputView;
  if (view === null) return;
  if (view.mode === 'live') openOutput(view.workId);
  else await fetchSnapshot(view);
}

/** @param {OutputView} view */
async function fetchSnapshot(view) {
  view.lastFetch = Date.now();
  const errorLine = byId('output-error');
  try {
    const response = await api(outputPath(view.workId));
    if (outputView !== view) return;
    if (!response.ok) {
      errorLine.hidden = false;
      errorLine.textContent = `Output unavailable: ${await errorText(response)}`;
      return;
    }
    const snapshot = await response.json();
    if (outputView !== view) return;
    errorLine.hidden = true;
    const text = byId('output-text');
    const atBottom = text.scrollTop + text.clientHeight >= text.scrollHeight - 4;
    text.textContent = snapshot.text;
    if (atBottom) text.scrollTop = text.scrollHeight;
    const total = snapshot.totalBytes ?? snapshot.bytes;
    byId('output-meta').textContent = snapshot.truncated
      ? `last ${formatBytes(snapshot.bytes)} of ${formatBytes(total)}`
      : formatBytes(snapshot.bytes);
    byId('output').setAttribute('data-loaded-bytes', String(snapshot.bytes));
  } catch (error) {
    errorLine.hidden = false;
    errorLine.textContent = `Output unavailable: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function renderOutputMeta() {
  if (outputView === null) return;
  const work = works.get(outputView.workId);
  byId('output-work').textContent =
    work === undefined ? outputView.workId : `${work.label} (${STATE_LABELS[work.state]})`;
}

// ------------------------------------------------------------------ start

/** @param {string} message */
function showFatal(message) {
  const fatal = byId('fatal');
  fatal.hidden = false;
  fatal.textContent = message;
}

const conversation = createConversationView({
  api,
  works: () => works.values(),
  openOutput,
  onMoved: () => scheduleSessionsRefresh(),
});

const notices = createNoticesView({ api });

function start() {
  byId('stop-all').addEventListener('click', () => {
    const running = sessionWorks().filter((work) => work.state === 'running').length;
    if (running > 0) showStopAllConfirm(running);
  });
  byId('stop-all-no').addEventListener('click', () => hideStopAllConfirm(true));
  byId('stop-all-confirm').addEventListener('keydown', (event) => {
    if (event.key === 'Escape') hideStopAllConfirm(true);
  });
  byId('stop-all-yes').addEventListener('click', () => {
    if (selectedSessionId !== null) void stopAll(selectedSessionId);
  });
  byId('output-refresh').addEventListener('click', () => void fetchOutput());
  byId('output-close').addEventListener('click', () => closeOutput(true));
  byId('output').addEventListener('keydown', (event) => {
    if (event.key === 'Escape') closeOutput(true);
  });
  if (token === '') {
    showFatal('This page needs the access token: open the URL errand printed, including its ?token=.');
    byId('connection').textContent = 'Not connected';
    return;
  }
  connect();
  void loadSessions();
  void notices.refresh();
  window.setInterval(() => void loadSessions(), SESSIONS_POLL_MS);
}

start();
