/**
 * Which stored session a restarted `errand mcp --durable` resumes: the newest session of the data
 * directory that an `errand mcp` recorded (`metadata.surface` is `mcp`), for the same client (the
 * `clientInfo.name` of its `initialize`), for the same directory (`--cwd` when given, else the launch
 * directory) and that no live server holds (its previous server crashed or exited). So a client that
 * restarts its server — or is restarted itself in the same place — finds its durable work again, while
 * two clients, or one client in two directories, never share a session. Without `--durable`, only a
 * session whose server died holding it is taken over (`crashedOnly`): what that server left is settled and
 * told once.
 */
import { isHolderLive } from '../session/session-holder.js';
import type { SessionHolder, SessionStore } from '../store/index.js';

export interface ResumableSessionQuery {
  readonly store: SessionStore;
  readonly clientName: string;
  /** `--cwd` when given, else the launch directory. */
  readonly directory: string;
  /** Default: the holder check sessions use (pid and process start). */
  readonly isHolderLive?: (holder: SessionHolder) => boolean;
  /**
   * Only a session whose server died holding it (a crash, a SIGKILL: its holder is still recorded and
   * gone), not one a server closed when it exited. Default false.
   */
  readonly crashedOnly?: boolean;
}

/** The id of the session to resume, or undefined when none matches. */
export function findResumableMcpSession(query: ResumableSessionQuery): string | undefined {
  const live = query.isHolderLive ?? isHolderLive;
  let newest: { id: string; updatedAt: number } | undefined;
  for (const session of query.store.listSessions()) {
    const metadata = session.metadata;
    if (metadata.surface !== 'mcp' || session.parentId !== undefined) continue;
    const client = metadata.client;
    const name =
      typeof client === 'object' && client !== null && !Array.isArray(client)
        ? (client as { readonly name?: unknown }).name
        : undefined;
    if (name !== query.clientName || metadata.launchDirectory !== query.directory) continue;
    if (session.holder !== undefined && live(session.holder)) continue;
    if (query.crashedOnly === true && session.holder === undefined) continue;
    if (newest === undefined || session.updatedAt > newest.updatedAt) {
      newest = { id: session.id, updatedAt: session.updatedAt };
    }
  }
  return newest?.id;
}
