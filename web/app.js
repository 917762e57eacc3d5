// @ts-check
/**
 * The Errand dashboard page: sessions with activity markers, a badge of running work, a status
 * panel with Stop, and a live output view. Live over server-sent events; no framework, no inline
 * code (the page's CSP allows only this file and its stylesheet).
 */

/**
 * @typedef {'running' | 'resultPending' | 'failed' | 'cancelled'} WorkState
 * @typedef {{
 *   workId: string, sessionId: string | null, kind: string, taskKind: string, label: string,
 *   state: WorkState, status: string, cancellable: boolean, startedAt: number, endedAt: number | null,
 *   cancelRequestedAt: number | null, pid: number | null, outputBytes: number | null, tail: string | null,
 *   exitCode: number | null, signal: string | null, error: string | null
 * }} BackgroundWork
 * @typedef {{ id: string, title: string | null, parentId: string | null, hasRunningWork: boolean }} Session
 * @typedef {{ taskId: string, sessionId: string | null, work: BackgroundWork | null }} TaskEventData
 * @typedef {{ scope: 'all' | 'session', sessionId: string | null, works: BackgroundWork[] }} LevelData
 */

/** Kinds the badge counts. */
const BADGE_KINDS = new Set(['bash', 'subagent', 'workflow']);
/** Session list refreshes are coalesced over this window. */
const SESSIONS_REFRESH_MS = 250;

const STATE_LABELS = /** @type {const} */ ({
  running: 'running',
  resultPending: 'result pending',
  failed: 'failed',
  cancelled: 'cancelled',
});

const token = new URLSearchParams(window.location.search).get('token') ?? '';

/** @type {Map<string, BackgroundWork>} */
const works = new Map();
/** @type {Session[]} */
let sessions = [];
/** @type {string | null} */
let selectedSessionId = null;
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

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @returns {T}
 */
function byId(id) {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`missing #${id}`);
  return /** @type {T} */ (element);
}

/**
 * @param {string} tag
 * @param {Record<string, string>} [attributes]
 * @param {(Node | string)[]} [children]
 */
function element(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

/** @param {number} bytes */
function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

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

/** @param {Response} response */
async function errorText(response) {
  try {
    const body = await response.json();
    return body?.error?.message ?? body?.message ?? response.statusText;
  } catch {
    return response.statusText;
  }
}

async function loadSessions() {
  const response = await api('/api/sessions');
  if (!response.ok) {
    showFatal(`Could not load sessions: ${await errorText(response)}`);
    return;
  }
  const body = await response.json();
  sessions = body.sessions;
  if (selectedSessionId === null && sessions.length > 0) selectedSessionId = sessions[0]?.id ?? null;
  render();
}

function scheduleSessionsRefresh() {
  if (sessionsTimer !== undefined) return;
  sessionsTimer = window.setTimeout(() => {
    sessionsTimer = undefined;
    void loadSessions();
  }, SESSIONS_REFRESH_MS);
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
      // Refused outright (a wrong token, a server gone for good): the browser will not retry.
      status.textContent = 'Disconnected';
      showFatal('The live event stream was refused. Reload the page, or open the URL errand printed.');
    } else {
      status.textContent = 'Reconnecting…';
    }
  });
  source.addEventListener('reset', () => {
    // A level follows; until then nothing we hold can be trusted.
    works.clear();
  });
  source.addEventListener('BackgroundWorksLevel', (event) => {
    applyLevel(/** @type {LevelData} */ (JSON.parse(/** @type {MessageEvent} */ (event).data)));
  });
  for (const type of ['BackgroundTaskStarted', 'BackgroundTaskUpdated', 'BackgroundTaskCompleted']) {
    source.addEventListener(type, (event) => {
      applyTaskEvent(/** @type {TaskEventData} */ (JSON.parse(/** @type {MessageEvent} */ (event).data)));
    });
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
  renderBadge();
  renderSessions();
  renderWorks();
  renderOutputMeta();
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
  const list = byId('sessions');
  byId('no-sessions').hidden = sessions.length > 0;
  const keep = new Set(sessions.map((session) => session.id));
  for (const [sessionId, item] of sessionItems) {
    if (!keep.has(sessionId)) {
      item.remove();
      sessionItems.delete(sessionId);
    }
  }
  sessions.forEach((session, index) => {
    let item = sessionItems.get(session.id);
    if (item === undefined) {
      item = createSessionItem(session.id);
      sessionItems.set(session.id, item);
    }
    updateSessionItem(item, session);
    placeAt(list, item, index);
  });
}

/** @param {string} sessionId */
function createSessionItem(sessionId) {
  const button = element('button', { type: 'button', class: 'session', 'data-session-id': sessionId }, [
    element('span', { class: 'marker', 'aria-hidden': 'true' }),
    element('span', { class: 'name' }),
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
 */
function updateSessionItem(item, session) {
  let running = 0;
  let active = false;
  for (const work of works.values()) {
    if (work.sessionId !== session.id) continue;
    if (work.state === 'running') active = true;
    if (countsForBadge(work)) running += 1;
  }
  const name = session.title ?? session.id;
  const button = /** @type {HTMLElement} */ (item.firstElementChild);
  button.className = active ? 'session active' : 'session';
  button.setAttribute('aria-current', String(session.id === selectedSessionId));
  button.setAttribute('aria-label', `${name}${active ? `, ${running} running` : ''}`);
  const [, nameSpan, countSpan] = button.children;
  if (nameSpan) nameSpan.textContent = name;
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
  const buttons = /** @type {HTMLElement[]} */ ([...byId('sessions').querySelectorAll('button.session')]);
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
  selectedSessionId = sessionId;
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
  if (work.pid !== null) parts.push(`pid ${work.pid}`);
  if (work.outputBytes !== null) parts.push(formatBytes(work.outputBytes));
  if (work.exitCode !== null) parts.push(`exit code ${work.exitCode}`);
  if (work.signal !== null) parts.push(work.signal);
  if (work.error !== null) parts.push(work.error);
  return parts.join(' · ');
}

function renderWorks() {
  const table = byId('works');
  const body = byId('works-body');
  const empty = byId('panel-empty');
  const list = sessionWorks();
  const session = sessions.find((candidate) => candidate.id === selectedSessionId);
  byId('panel-heading').textContent =
    session === undefined ? 'Background work' : `Background work of ${session.title ?? session.id}`;
  table.hidden = list.length === 0;
  empty.hidden = list.length > 0;
  empty.textContent =
    selectedSessionId === null ? 'Select a session to see its background work.' : 'No background work.';

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

function start() {
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
}

start();
