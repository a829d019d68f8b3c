// An admin's label on a session, flagged or not: "false alarm" (calibrate's
// label healthy) or "confirmed loop" (loop), kept with who and when; a later
// mark replaces it. What it lifts is decided by router-ext/modes/lifts.ts
// (markLifts) on the rows gathered here; this writes the answer. On a session
// never flagged it lifts nothing, and the answer says so. Runs inside the
// caller's transaction.
import type { MarkView } from "../api/session-detail.ts";
import { type MarkLifts, markLifts } from "../modes/lifts.ts";
import type { ModesStore } from "../modes/store.ts";
import type { Tables } from "./open-tables.ts";
import type { MarkKind } from "./tables/marks.ts";

/** What marking a session did; `note` says why nothing was lifted, or what a mark on a quiet session means. */
export type MarkResult =
  | { ok: true; rootId: string; lifted: string[]; mark: MarkView; note: string | null }
  | { ok: false; status: 404; error: string };

export async function markSession(
  t: Tables,
  modes: ModesStore,
  m: { sessionId: string; kind: MarkKind; by: string; at: number },
): Promise<MarkResult> {
  const s = await t.sessions.get(m.sessionId);
  if (!s) return { ok: false, status: 404, error: `no session ${m.sessionId}` };
  const root = s.root_id;
  const lifts = markLifts(
    m.kind,
    s,
    await t.refusals.get("tree", root),
    await t.refusals.stoppedSessionsInTree(root),
  );
  await t.marks.set({
    session_id: m.sessionId,
    root_id: root,
    kind: m.kind,
    verdict: s.verdict,
    reason: s.reason,
    marked_by: m.by,
    marked_at: m.at,
  });
  await t.counters.bump(`marks_total:${m.kind}`);
  await liftTree(t, modes, m, root, lifts);
  return {
    ok: true,
    rootId: root,
    lifted: lifts.lifted,
    mark: { kind: m.kind, by: m.by, at: m.at, verdict: s.verdict, reason: s.reason },
    note: markNote(m.kind, lifts.flagged, lifts.lifted.length > 0),
  };
}

/** Writes what markLifts decided: the refusals it names, and the mode's hold on the tree. */
async function liftTree(
  t: Tables,
  modes: ModesStore,
  m: { sessionId: string; by: string; at: number },
  root: string,
  lifts: MarkLifts,
): Promise<void> {
  const { by, at } = m;
  const reason = `false alarm (${m.sessionId})`;
  if (lifts.tree) {
    await t.refusals.set({ scope: "tree", key: root, state: "running", by, at, reason });
    await t.sessions.clearStopped("tree", root);
  }
  for (const key of lifts.sessions) {
    await t.refusals.set({ scope: "session", key, state: "running", by, at, reason });
    await t.sessions.clearStopped("session", key);
  }
  if (lifts.resumeTree) await modes.resumeTree(root, at);
}

/** Why a false alarm lifted nothing, or what a mark on a session never flagged means; null otherwise. */
export function markNote(kind: MarkKind, flagged: boolean, lifted: boolean): string | null {
  if (!flagged)
    return kind === "false_alarm"
      ? "never flagged: nothing to lift; kept as a healthy run for calibrate"
      : "never flagged: kept as a loop the detection missed, for calibrate";
  if (kind === "false_alarm" && !lifted) return "nothing in its tree was refused: nothing to lift";
  return null;
}
