// What opencode shows its user about each session, for the admin page: the
// title, the folder (the home folder written ~) and when it was created, from
// session.created / session.updated events' info. No other text of a session
// is read. Cleaned and capped (shared/display-text.ts) before it is kept.
import { homedir } from "node:os";
import { BoundedMap } from "../shared/bounded-map.ts";
import { displayText } from "../shared/display-text.ts";
import { num, obj, text } from "../shared/read.ts";
import { DIRECTORY_MAX, type HeartbeatSession, TITLE_MAX } from "../shared/wire.ts";

export type SessionInfo = Pick<HeartbeatSession, "title" | "directory" | "created_at">;

/** `dir` with the home folder written `~` (the page needs the project, not the user's home path). */
export function shortFolder(dir: string, home: string): string {
  const h = home.replace(/\/+$/, "");
  if (h.length > 1 && (dir === h || dir.startsWith(`${h}/`))) return `~${dir.slice(h.length)}`;
  return dir;
}

/** The info of a session.created / session.updated event's properties; null without an id. */
export function sessionInfoFrom(properties: unknown, home: string): { id: string; info: SessionInfo } | null {
  const info = obj(obj(properties).info);
  const id = text(info.id);
  if (!id) return null;
  const dir = text(info.directory);
  const created = num(obj(info.time).created);
  return {
    id,
    info: {
      title: displayText(info.title, TITLE_MAX),
      directory: dir === undefined ? null : displayText(shortFolder(dir, home), DIRECTORY_MAX),
      created_at: created !== undefined && created >= 0 ? Math.floor(created) : null,
    },
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
  note(properties: unknown): void {
    const got = sessionInfoFrom(properties, this.home);
    if (!got) return;
    const before = this.infos.get(got.id);
    this.infos.set(got.id, {
      title: got.info.title ?? before?.title ?? null,
      directory: got.info.directory ?? before?.directory ?? null,
      created_at: got.info.created_at ?? before?.created_at ?? null,
    });
  }

  get(sessionId: string): SessionInfo | undefined {
    return this.infos.get(sessionId);
  }

  forget(sessionId: string): void {
    this.infos.delete(sessionId);
  }
}
