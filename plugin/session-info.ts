// What opencode shows its user about each session, for the admin page: the
// title, the folder (the home folder written ~) and when it was created, from
// session.created / session.updated events (plugin/events.ts reads them). No
// other text of a session is read. Cleaned and capped (shared/display-text.ts)
// before it is kept.
import { homedir } from "node:os";
import { BoundedMap, DIRECTORY_MAX, displayText, type HeartbeatSession, TITLE_MAX } from "../shared/index.ts";
import type { SessionSeen } from "./events.ts";

export type SessionInfo = Pick<HeartbeatSession, "title" | "directory" | "created_at">;

/** `dir` with the home folder written `~` (the page needs the project, not the user's home path). */
export function shortFolder(dir: string, home: string): string {
  const h = home.replace(/\/+$/, "");
  if (h.length > 1 && (dir === h || dir.startsWith(`${h}/`))) return `~${dir.slice(h.length)}`;
  return dir;
}

/** What the admin page may show of a session opencode announced (cleaned, capped). */
export function sessionInfoFrom(seen: SessionSeen, home: string): SessionInfo {
  const dir = seen.directory;
  const created = seen.createdAt;
  return {
    title: displayText(seen.title, TITLE_MAX),
    directory: dir === undefined ? null : displayText(shortFolder(dir, home), DIRECTORY_MAX),
    created_at: created !== undefined && created >= 0 ? Math.floor(created) : null,
  };
}

/** The latest info per session, bounded like the plugin's other per-session state. */
export class SessionInfos {
  private readonly infos: BoundedMap<string, SessionInfo>;
  private readonly home: string;

  constructor(capacity: number, home: string = homedir()) {
    this.infos = new BoundedMap(Math.max(16, capacity));
    this.home = home;
  }

  /** Keeps what a session event says; a field the event lacks keeps its earlier value. */
  note(seen: SessionSeen): void {
    const info = sessionInfoFrom(seen, this.home);
    const before = this.infos.get(seen.id);
    this.infos.set(seen.id, {
      title: info.title ?? before?.title ?? null,
      directory: info.directory ?? before?.directory ?? null,
      created_at: info.created_at ?? before?.created_at ?? null,
    });
  }

  get(sessionId: string): SessionInfo | undefined {
    return this.infos.get(sessionId);
  }

  forget(sessionId: string): void {
    this.infos.delete(sessionId);
  }
}
