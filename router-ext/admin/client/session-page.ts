// The session page's controller: reads GET /api/sessions/:id, renders it, and
// carries out the mark buttons (POST / DELETE /api/sessions/:id/mark, then a
// fresh read). A 401 goes back to the token prompt like everywhere else.
import { markResponseSchema, sessionDetailSchema } from "../../api/session-detail.ts";
import { type Api, ApiError } from "./api.ts";
import { h, replace } from "./dom.ts";
import { renderSessionPage } from "./session-view.ts";
import { tabHash } from "./tabs.ts";

export interface SessionPageDeps {
  root: HTMLElement;
  api: Api;
  unauthorized(): void;
  setStatus(text: string, error?: boolean): void;
  /** Refreshes the readout after a mark (its mark column and refusals changed). */
  refreshReadout(): Promise<void>;
}

/** What was last drawn into each root, so an auto-refresh with nothing new leaves the page alone. */
const drawn = new WeakMap<HTMLElement, string>();
/** The server's note on the last mark per session (why a false alarm lifted nothing), shown beside it. */
const notes = new Map<string, string>();

export async function loadSessionPage(id: string, d: SessionPageDeps): Promise<void> {
  const path = `/api/sessions/${encodeURIComponent(id)}`;
  let raw: unknown;
  try {
    raw = await d.api.get(path);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return d.unauthorized();
    drawn.delete(d.root);
    replace(
      d.root,
      h(
        "h2",
        {},
        h("a", { href: tabHash({ name: "sessions" }), class: "back" }, "< Sessions"),
        ` session ${id}`,
      ),
      h("div", { class: "err", id: "session-error" }, (err as Error).message),
    );
    return;
  }
  const parsed = sessionDetailSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    replace(d.root, h("div", { class: "err" }, `session: ${first?.path.join(".")}: ${first?.message}`));
    return;
  }
  const note = parsed.data.mark ? (notes.get(id) ?? null) : null;
  const signature = JSON.stringify({ ...parsed.data, now: 0, note });
  if (drawn.get(d.root) === signature) return;
  const write = async (method: "POST" | "DELETE", body?: unknown) => {
    try {
      const answer = markResponseSchema.safeParse(await d.api.send(method, `${path}/mark`, body));
      // A false alarm that lifted nothing says why (a session never flagged, nothing refused).
      const note = answer.success ? answer.data.note : null;
      if (note) notes.set(id, note);
      else notes.delete(id);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return d.unauthorized();
      d.setStatus(`mark ${id}: ${(err as Error).message}`, true);
      return;
    }
    await Promise.all([loadSessionPage(id, d), d.refreshReadout()]);
  };
  drawn.set(d.root, signature);
  renderSessionPage(
    d.root,
    parsed.data,
    {
      mark: (kind) => write("POST", { kind, by: "admin" }),
      unmark: () => write("DELETE"),
    },
    note,
  );
}
