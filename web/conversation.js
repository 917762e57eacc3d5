// @ts-check
/**
 * The conversation view: a session's messages, newest page first loaded, with each tool call as a card
 * whose status follows its work by tool-use id — started, running (in the foreground, with "Move to
 * background", or in the background), then how it ended: the status and exit code of the notification
 * that told the model, or of the work itself while that is pending. Newer messages and the foreground
 * work are read every POLL_MS and soon after any event of the session's work.
 */
import { element, errorText } from './dom.js';

/**
 * @typedef {{ id: string, name: string, summary: string, description: string | null }} ToolCall
 * @typedef {{ toolCallId: string, isError: boolean, text: string, truncated: boolean }} ToolResult
 * @typedef {{ taskId: string, toolUseId: string | null, status: string, summary: string | null, exitCode: number | null }} DeliveredNotification
 * @typedef {{
 *   seq: number, role: string, source: string, visibility: string, createdAt: number, text: string | null,
 *   truncated: boolean, toolCalls: ToolCall[], toolResults: ToolResult[], notifications: DeliveredNotification[]
 * }} Message
 * @typedef {{
 *   workId: string, sessionId: string, toolCallId: string | null, taskKind: string, label: string,
 *   startedAt: number, canMoveToBackground: boolean
 * }} ForegroundWork
 * @typedef {{
 *   workId: string, sessionId: string | null, toolUseId: string | null, kind: string, label: string,
 *   state: string, status: string, startedAt: number, exitCode: number | null
 * }} WorkLike
 * @typedef {{
 *   api: (path: string, init?: RequestInit) => Promise<Response>,
 *   works: () => Iterable<WorkLike>,
 *   openOutput: (workId: string) => void,
 *   onMoved: () => void,
 * }} ConversationDeps
 * @typedef {{
 *   sessionId: string, messages: Map<number, Message>, hasOlder: boolean, available: boolean,
 *   foreground: ForegroundWork[], loaded: boolean, poll: number | undefined, soon: number | undefined,
 *   reading: boolean, error: string | null
 * }} View
 * @typedef {{ available: boolean, messages: Message[], hasOlder: boolean, foreground: ForegroundWork[] }} Page
 */

/** Newer messages and the foreground work are read this often while a session is shown. */
const POLL_MS = 1500;
/** An event of the session's work asks for a read this soon (coalesced). */
const REFRESH_SOON_MS = 150;
/** Messages kept in the page at most; the oldest go first (they can be read again). */
const MAX_MESSAGES = 500;

/** What a card says for each state. */
const CARD_LABELS = /** @type {const} */ ({
  started: 'started',
  foreground: 'running in the foreground',
  running: 'running in the background',
  resultPending: 'ended, result not yet told to the model',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'stopped',
  lost: 'lost',
});

/** @typedef {keyof typeof CARD_LABELS} CardState */

/**
 * @param {string} status a notification's or a work's status word
 * @returns {CardState}
 */
function stateOfStatus(status) {
  if (status === 'completed') return 'completed';
  if (status === 'killed' || status === 'cancelled') return 'cancelled';
  if (status === 'lost') return 'lost';
  return 'failed';
}

/**
 * @param {ConversationDeps} deps
 */
export function createConversationView(deps) {
  const section = /** @type {HTMLElement} */ (document.getElementById('conversation'));
  const list = /** @type {HTMLOListElement} */ (document.getElementById('conversation-list'));
  const older = /** @type {HTMLButtonElement} */ (document.getElementById('conversation-older'));
  const empty = /** @type {HTMLElement} */ (document.getElementById('conversation-empty'));
  /** @type {Map<string, HTMLElement>} */
  const items = new Map();
  /** Moves sent and not yet answered, by work id. @type {Set<string>} */
  const pendingMoves = new Set();
  /** A refused move, shown on its card. @type {Map<string, string>} */
  const moveErrors = new Map();

  /** @type {View | null} */
  let view = null;

  older.addEventListener('click', () => void readOlder());

  /** @param {string} sessionId */
  function show(sessionId) {
    if (view?.sessionId === sessionId) return;
    hide();
    view = {
      sessionId,
      messages: new Map(),
      hasOlder: false,
      available: true,
      foreground: [],
      loaded: false,
      poll: undefined,
      soon: undefined,
      reading: false,
      error: null,
    };
    section.hidden = false;
    const current = view;
    current.poll = window.setInterval(() => void readNewer(current), POLL_MS);
    void readNewest(current);
    render();
  }

  function hide() {
    if (view === null) return;
    window.clearInterval(view.poll);
    window.clearTimeout(view.soon);
    view = null;
    for (const item of items.values()) item.remove();
    items.clear();
    section.hidden = true;
  }

  /** Something of the shown session changed: read newer messages soon. */
  function refreshSoon() {
    const current = view;
    if (current === null || current.soon !== undefined) return;
    current.soon = window.setTimeout(() => {
      current.soon = undefined;
      void readNewer(current);
    }, REFRESH_SOON_MS);
  }

  /**
   * @param {View} current
   * @param {string} query
   * @returns {Promise<Page | undefined>}
   */
  async function read(current, query) {
    const response = await deps.api(
      `/api/sessions/${encodeURIComponent(current.sessionId)}/conversation${query}`,
    );
    if (view !== current) return undefined;
    if (!response.ok) {
      current.error = `Conversation unavailable: ${await errorText(response)}`;
      render();
      return undefined;
    }
    current.error = null;
    return /** @type {Page} */ (await response.json());
  }

  /** @param {View} current */
  async function readNewest(current) {
    const page = await read(current, '').catch(() => undefined);
    if (page === undefined || view !== current) return;
    current.available = page.available;
    current.hasOlder = page.hasOlder;
    current.foreground = page.foreground;
    for (const message of page.messages) current.messages.set(message.seq, message);
    current.loaded = true;
    render();
  }

  /** @param {View} current */
  async function readNewer(current) {
    if (!current.loaded || current.reading) return;
    current.reading = true;
    try {
      const last = Math.max(0, ...current.messages.keys());
      const page = await read(current, `?after=${last}`);
      if (page === undefined || view !== current) return;
      current.foreground = page.foreground;
      for (const message of page.messages) current.messages.set(message.seq, message);
      trim(current);
      render();
    } catch {
      // The next poll tries again.
    } finally {
      current.reading = false;
    }
  }

  async function readOlder() {
    const current = view;
    if (current === null || current.messages.size === 0) return;
    const first = Math.min(...current.messages.keys());
    const page = await read(current, `?before=${first}`).catch(() => undefined);
    if (page === undefined || view !== current) return;
    current.hasOlder = page.hasOlder;
    for (const message of page.messages) current.messages.set(message.seq, message);
    render();
  }

  /** @param {View} current */
  function trim(current) {
    if (current.messages.size <= MAX_MESSAGES) return;
    const seqs = [...current.messages.keys()].sort((left, right) => left - right);
    for (const seq of seqs.slice(0, seqs.length - MAX_MESSAGES)) current.messages.delete(seq);
    current.hasOlder = true;
  }

  /** @param {ForegroundWork} work */
  async function moveToBackground(work) {
    pendingMoves.add(work.workId);
    moveErrors.delete(work.workId);
    render();
    try {
      const response = await deps.api('/api/commands', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'moveToBackground', workId: work.workId }),
      });
      const body = await response.json().catch(() => ({}));
      if (!response.ok || body.ok !== true) {
        const reason = body.fault ?? body.error?.code ?? `HTTP ${response.status}`;
        moveErrors.set(work.workId, `Not moved: ${body.message ?? 'nothing was moved'} (${reason})`);
      } else {
        deps.onMoved();
      }
    } catch (error) {
      moveErrors.set(work.workId, `Not moved: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      pendingMoves.delete(work.workId);
      if (view !== null) void readNewer(view);
      render();
    }
  }

  // ---------------------------------------------------------------- rendering

  function render() {
    const current = view;
    if (current === null) return;
    older.hidden = !current.hasOlder;
    const messages = [...current.messages.values()].sort((left, right) => left.seq - right.seq);

    /** @type {Map<string, ToolResult>} */
    const results = new Map();
    /** @type {Map<string, DeliveredNotification>} */
    const notified = new Map();
    for (const message of messages) {
      for (const result of message.toolResults) results.set(result.toolCallId, result);
      for (const notification of message.notifications) {
        notified.set(notification.toolUseId ?? `task:${notification.taskId}`, notification);
      }
    }
    /** @type {Map<string, WorkLike>} */
    const works = new Map();
    for (const work of deps.works()) {
      if (work.sessionId === current.sessionId && work.toolUseId !== null) works.set(work.toolUseId, work);
    }
    /** @type {Map<string, ForegroundWork>} */
    const foreground = new Map();
    for (const work of current.foreground) foreground.set(work.toolCallId ?? `task:${work.workId}`, work);

    /** @type {Array<[string, (node: HTMLElement | undefined) => HTMLElement]>} */
    const wanted = [];
    const calls = new Set();
    for (const message of messages) {
      if (message.role === 'tool') continue;
      if (message.role === 'assistant') {
        if (message.text) wanted.push([`m${message.seq}`, (node) => turnItem(node, message, 'assistant')]);
        for (const call of message.toolCalls) {
          calls.add(call.id);
          wanted.push([
            `c${call.id}`,
            (node) =>
              cardItem(
                node,
                call.id,
                call.description === null ? call.name : `${call.name} · ${call.description}`,
                call.summary,
                {
                  result: results.get(call.id),
                  notification: notified.get(call.id),
                  work: works.get(call.id),
                  foreground: foreground.get(call.id),
                },
              ),
          ]);
        }
      } else if (message.notifications.length > 0) {
        wanted.push([`m${message.seq}`, (node) => noticeItem(node, message)]);
      } else if (message.role === 'user' && message.visibility === 'all') {
        wanted.push([`m${message.seq}`, (node) => turnItem(node, message, 'user')]);
      } else if (message.text) {
        wanted.push([`m${message.seq}`, (node) => turnItem(node, message, 'other')]);
      }
    }
    // Work started by calls this conversation does not hold (an MCP client keeps its own): cards too.
    /** @type {Map<string, { label: string, kind: string, startedAt: number }>} */
    const orphans = new Map();
    for (const [key, work] of works) {
      if (!calls.has(key))
        orphans.set(key, { label: work.label, kind: work.kind, startedAt: work.startedAt });
    }
    for (const [key, work] of foreground) {
      if (!calls.has(key))
        orphans.set(key, { label: work.label, kind: work.taskKind, startedAt: work.startedAt });
    }
    for (const [key, orphan] of [...orphans].sort((left, right) => left[1].startedAt - right[1].startedAt)) {
      wanted.push([
        `c${key}`,
        (node) =>
          cardItem(node, key, orphan.kind, orphan.label, {
            result: undefined,
            notification: notified.get(key),
            work: works.get(key),
            foreground: foreground.get(key),
          }),
      ]);
    }

    const keep = new Set(wanted.map(([key]) => key));
    for (const [key, item] of items) {
      if (!keep.has(key)) {
        item.remove();
        items.delete(key);
      }
    }
    wanted.forEach(([key, build], index) => {
      const node = build(items.get(key));
      items.set(key, node);
      if (list.children[index] !== node) list.insertBefore(node, list.children[index] ?? null);
    });
    empty.hidden = wanted.length > 0 || !current.loaded;
    empty.textContent =
      current.error ??
      (current.available
        ? 'Nothing said in this session yet.'
        : 'This dashboard keeps no conversation for it.');
    if (current.error !== null) empty.hidden = false;
  }

  /**
   * @param {HTMLElement | undefined} node
   * @param {Message} message
   * @param {'user' | 'assistant' | 'other'} who
   */
  function turnItem(node, message, who) {
    const item = node ?? element('li', { class: `turn turn-${who}`, 'data-seq': String(message.seq) });
    const speaker = who === 'user' ? 'You' : who === 'assistant' ? 'Assistant' : message.source;
    const text = `${message.text ?? ''}${message.truncated ? ' …' : ''}`;
    item.replaceChildren(
      element('span', { class: 'speaker' }, [speaker]),
      element('p', { class: 'said' }, [text]),
    );
    return item;
  }

  /**
   * @param {HTMLElement | undefined} node
   * @param {Message} message
   */
  function noticeItem(node, message) {
    const item = node ?? element('li', { class: 'turn turn-notice', 'data-seq': String(message.seq) });
    const parts = message.notifications.map((notification) =>
      notification.exitCode === null
        ? `${notification.taskId} ${notification.status}`
        : `${notification.taskId} ${notification.status} (exit code ${notification.exitCode})`,
    );
    item.textContent = `Told the model: ${parts.join(', ')}`;
    return item;
  }

  /**
   * @param {HTMLElement | undefined} node
   * @param {string} callId
   * @param {string} name
   * @param {string} summary
   * @param {{ result: ToolResult | undefined, notification: DeliveredNotification | undefined, work: WorkLike | undefined, foreground: ForegroundWork | undefined }} facts
   */
  function cardItem(node, callId, name, summary, facts) {
    const item =
      node ??
      element('li', { class: 'card', 'data-tool-call-id': callId }, [
        element('div', { class: 'card-head' }, [
          element('span', { class: 'tool' }),
          element('code', { class: 'summary' }),
        ]),
        element('div', { class: 'card-status' }, [element('span', { class: 'card-state' })]),
        element('div', { class: 'actions' }),
      ]);
    const { state, detail, workId } = cardFacts(facts);
    item.setAttribute('data-card-state', state);
    item.setAttribute('data-notified', String(facts.notification !== undefined));
    const exitCode = facts.notification?.exitCode ?? facts.work?.exitCode ?? null;
    if (exitCode === null) item.removeAttribute('data-exit-code');
    else item.setAttribute('data-exit-code', String(exitCode));
    const tool = item.querySelector('.tool');
    if (tool) tool.textContent = name;
    const code = item.querySelector('.summary');
    if (code) code.textContent = summary;
    const stateText = item.querySelector('.card-state');
    if (stateText) {
      stateText.className = `card-state state-${state}`;
      stateText.textContent = [CARD_LABELS[state], exitCode === null ? '' : `exit code ${exitCode}`, detail]
        .filter((part) => part !== '')
        .join(' · ');
    }
    const actions = /** @type {HTMLElement} */ (item.querySelector('.actions'));
    updateCardActions(actions, facts, workId);
    return item;
  }

  /**
   * @param {{ result: ToolResult | undefined, notification: DeliveredNotification | undefined, work: WorkLike | undefined, foreground: ForegroundWork | undefined }} facts
   * @returns {{ state: CardState, detail: string, workId: string | null }}
   */
  function cardFacts(facts) {
    const { result, notification, work, foreground } = facts;
    if (notification !== undefined) {
      return {
        state: stateOfStatus(notification.status),
        detail: 'told the model',
        workId: notification.taskId,
      };
    }
    if (work !== undefined) {
      if (work.state === 'running') return { state: 'running', detail: work.workId, workId: work.workId };
      if (work.state === 'resultPending')
        return { state: 'resultPending', detail: work.workId, workId: work.workId };
      // Ended, and the model told (or never to be told): its final state.
      const ended = work.state === 'completed' || work.state === 'cancelled' ? work.state : 'failed';
      return {
        state: ended === 'failed' && work.status === 'lost' ? 'lost' : ended,
        detail: work.workId,
        workId: work.workId,
      };
    }
    if (foreground !== undefined)
      return { state: 'foreground', detail: foreground.workId, workId: foreground.workId };
    if (result !== undefined) {
      const firstLine = result.text.split('\n')[0] ?? '';
      return {
        state: result.isError ? 'failed' : 'completed',
        detail: firstLine.slice(0, 160),
        workId: null,
      };
    }
    return { state: 'started', detail: '', workId: null };
  }

  /**
   * @param {HTMLElement} actions
   * @param {{ work: WorkLike | undefined, foreground: ForegroundWork | undefined }} facts
   * @param {string | null} workId
   */
  function updateCardActions(actions, facts, workId) {
    const movable = facts.foreground?.canMoveToBackground === true && facts.work === undefined;
    let move = /** @type {HTMLButtonElement | null} */ (actions.querySelector('button.move'));
    if (movable && move === null) {
      const work = /** @type {ForegroundWork} */ (facts.foreground);
      move = /** @type {HTMLButtonElement} */ (
        element('button', { type: 'button', class: 'move' }, ['Move to background'])
      );
      move.addEventListener('click', () => void moveToBackground(work));
      actions.prepend(move);
    } else if (!movable && move !== null) {
      move.remove();
      move = null;
    }
    if (move !== null && facts.foreground) {
      const pending = pendingMoves.has(facts.foreground.workId);
      move.disabled = pending;
      move.textContent = pending ? 'Moving…' : 'Move to background';
      move.setAttribute('aria-label', `Move ${facts.foreground.label} to the background`);
    }
    const bash = facts.work?.kind === 'bash' && workId !== null;
    let output = /** @type {HTMLButtonElement | null} */ (actions.querySelector('button.card-output'));
    if (bash && output === null) {
      output = /** @type {HTMLButtonElement} */ (
        element('button', { type: 'button', class: 'card-output' }, ['Output'])
      );
      const id = /** @type {string} */ (workId);
      output.addEventListener('click', () => deps.openOutput(id));
      actions.append(output);
    } else if (!bash && output !== null) {
      output.remove();
    }
    const message = facts.foreground ? moveErrors.get(facts.foreground.workId) : undefined;
    let error = actions.parentElement?.querySelector('.row-error') ?? null;
    if (message === undefined) {
      error?.remove();
    } else {
      if (error === null) {
        error = element('p', { class: 'row-error', role: 'alert' });
        actions.after(error);
      }
      error.textContent = message;
    }
  }

  return { show, hide, refreshSoon, render };
}
