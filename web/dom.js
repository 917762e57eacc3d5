// @ts-check
/** Small helpers the dashboard's modules share: element lookup and creation, and formatting. */

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @returns {T}
 */
export function byId(id) {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`missing #${id}`);
  return /** @type {T} */ (element);
}

/**
 * @param {string} tag
 * @param {Record<string, string>} [attributes]
 * @param {(Node | string)[]} [children]
 */
export function element(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

/** @param {number} bytes */
export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/**
 * A time a person reads at a glance: the clock time today, else the day and the time.
 * @param {number} epochMs
 */
export function formatStart(epochMs) {
  const date = new Date(epochMs);
  const today = new Date();
  const time = date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  if (date.toDateString() === today.toDateString()) return time;
  const day = date.toLocaleDateString(undefined, { weekday: 'short', day: 'numeric', month: 'short' });
  return `${day} ${time}`;
}

/**
 * A working directory shortened to its last two parts (the whole path goes in a tooltip).
 * @param {string} path
 */
export function shortPath(path) {
  const parts = path.split('/').filter((part) => part !== '');
  return parts.length <= 2 ? path : `…/${parts.slice(-2).join('/')}`;
}

/** @param {Response} response */
export async function errorText(response) {
  try {
    const body = await response.json();
    return body?.error?.message ?? body?.message ?? response.statusText;
  } catch {
    return response.statusText;
  }
}
