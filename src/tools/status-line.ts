/** The `[status: ...]` line every task tool answer ends with. */
import { presentedStatus, statusFacts } from '../notifications/index.js';
import type { TaskSnapshot } from '../tasks/index.js';
import { toSingleLine } from '../text/index.js';

/** `[status: completed (exit code 0)]`, `[status: running (waited 30000 ms; still running)]`. */
export function formatStatusLine(snapshot: TaskSnapshot, note?: string): string {
  const worker = (snapshot.detail as { readonly worker?: unknown }).worker;
  const where =
    typeof worker === 'string' && worker !== '' ? `on worker ${toSingleLine(worker).slice(0, 64)}` : '';
  const parts = [statusFacts(snapshot).join(', '), where, note ?? ''].filter((part) => part !== '');
  const status = presentedStatus(snapshot);
  return `[status: ${toSingleLine(parts.length === 0 ? status : `${status} (${parts.join('; ')})`)}]`;
}
