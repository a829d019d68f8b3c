// Reading listed sessions from an open opencode.db: what calibrate --db's
// serial read (router-ext/calibrate/sources.ts) and each replay worker
// (router-ext/calibrate/replay-worker.ts) share. Kept apart from sources.ts so
// the worker's bundle leaves out what only the main thread needs (zod, exports).
import type { StoredOptions } from "../../shared/index.ts";
import type { OpencodeDb, SessionRow } from "../opencode-db/reader.ts";
import type { DbOptions, SourceSession } from "./sources.ts";

/** The warning for rows skipped as malformed (none when there were none). */
export function malformedWarnings(bad: number): string[] {
  return bad ? [`${bad} malformed session/message/part row(s) skipped`] : [];
}

/**
 * Reads the listed sessions (the caller holds the read transaction): each
 * turned into observations with `observe`, or carrying its messages without.
 * Also what a replay worker (router-ext/calibrate/replay-worker.ts) reads its
 * share with.
 */
export function readSessions(
  reader: OpencodeDb,
  rows: readonly SessionListing[],
  onProgress?: DbOptions["onProgress"],
  observe?: StoredOptions,
): { sessions: SourceSession[]; malformed: number } {
  const out: SourceSession[] = [];
  let malformed = 0;
  for (const [i, s] of rows.entries()) {
    const session: SourceSession = {
      id: s.id,
      parentId: s.parentId,
      directory: s.directory,
      title: s.title,
      updated: s.updated,
      messages: [],
    };
    if (observe) {
      const read = reader.observations(session, observe);
      malformed += read.malformed;
      session.observed = { observations: read.observations, opts: observe };
    } else {
      const read = reader.messages(s.id);
      malformed += read.malformed;
      session.messages = read.messages;
    }
    out.push(session);
    onProgress?.(i + 1, rows.length);
  }
  return { sessions: out, malformed };
}

/** What a session's listing row gives the read: the replay needs no more. */
export type SessionListing = Pick<SessionRow, "id" | "parentId" | "directory" | "title" | "updated">;
