// An admin's label on a session, flagged or not: "false alarm" (calibrate's
// label healthy) or "confirmed loop" (loop), kept with who and when; a later
// mark replaces it. A false alarm on a flagged session also lifts every
// refusal in its tree, the way Resume does: the tree's refusal and mode
// state, and each session refused on its own. On a session never flagged it
// lifts nothing, and the answer says so. Runs inside the caller's transaction.
import type { MarkView } from "../api/session-detail.ts";
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
  const flagged = s.worst !== "ok" || s.flags > 0;
  const root = s.root_id;
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
  const lifted = m.kind === "false_alarm" && flagged ? await liftTree(t, modes, m, root) : [];
  return {
    ok: true,
    rootId: root,
    lifted,
    mark: { kind: m.kind, by: m.by, at: m.at, verdict: s.verdict, reason: s.reason },
    note: markNote(m.kind, flagged, lifted.length > 0),
  };
}

/** Every refusal in the tree, and the mode's hold on it (hard stop, cap, recovery count, open directives). */
async function liftTree(
  t: Tables,
  modes: ModesStore,
  m: { sessionId: string; by: string; at: number },
  root: string,
): Promise<string[]> {
  const { by, at } = m;
  const reason = `false alarm (${m.sessionId})`;
  const lifted: string[] = [];
  if ((await t.refusals.get("tree", root))?.state === "stopped") {
    await t.refusals.set({ scope: "tree", key: root, state: "running", by, at, reason });
    await t.sessions.clearStopped("tree", root);
    lifted.push(`tree ${root}`);
  }
  for (const key of await t.refusals.stoppedSessionsInTree(root)) {
    await t.refusals.set({ scope: "session", key, state: "running", by, at, reason });
    await t.sessions.clearStopped("session", key);
    lifted.push(`session ${key}`);
  }
  await modes.resumeTree(root, at);
  return lifted;
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
