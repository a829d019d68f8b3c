// Reading listed sessions from an open opencode.db: what calibrate --db's
// whole read (router-ext/calibrate/sources.ts), its tree-by-tree run in one
// thread (replay-serial.ts) and each replay worker (replay-worker.ts) share.
// Kept apart from sources.ts so the worker's bundle leaves out what only the
// main thread needs (zod, exports).
import {
  observeOptions,
  type Policy,
  type ReplayResult,
  replay,
  type StoredOptions,
} from "../../shared/index.ts";
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

/**
 * Reads and judges session trees one at a time, each tree `claim` hands out
 * (its index, or past the end when none is left), so only one tree's
 * observations are held: the caller holds the read transaction. `onRead` is
 * told the sessions read so far after each one (a tree of many sessions moves
 * a progress bar as it is read).
 */
export function judgeTrees(
  reader: OpencodeDb,
  trees: readonly SessionListing[][],
  claim: () => number,
  run: { policy: Policy; timeline: boolean },
  onRead?: (sessions: number) => void,
): { results: ReplayResult[]; malformed: number } {
  const observe = observeOptions(run.policy);
  const results: ReplayResult[] = [];
  let malformed = 0;
  let sessions = 0;
  for (let at = claim(); at < trees.length; at = claim()) {
    const tree = trees[at] as SessionListing[];
    const before = sessions;
    const read = readSessions(reader, tree, onRead && ((i) => onRead(before + i)), observe);
    malformed += read.malformed;
    for (const r of replay(read.sessions, run.policy, { timeline: run.timeline })) results.push(r);
    sessions += tree.length;
  }
  return { results, malformed };
}

/** One result per listed session, in the listing's order; a session left unjudged is an error. */
export function inListingOrder(
  listed: readonly SessionListing[],
  results: readonly ReplayResult[],
): ReplayResult[] {
  const byId = new Map<string, ReplayResult>();
  for (const r of results) byId.set(r.id, r);
  return listed.map((s) => {
    const r = byId.get(s.id);
    if (!r) throw new Error(`session ${s.id} was listed but never judged`);
    return r;
  });
}
