// The page's views, kept in the URL fragment (never sent to the server), so
// a session page can be bookmarked and the back button works:
//   #view=sessions (default), #view=session&id=<session>, #view=activity, #view=knobs.
// The fragment may also carry the admin token once (#token=...), read and removed by main.ts.

export type View =
  | { name: "sessions" }
  | { name: "session"; id: string }
  | { name: "activity" }
  | { name: "knobs" };

export type ViewName = View["name"];

/** The view a fragment names; anything unknown is the Sessions readout. */
export function parseView(hash: string): View {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const name = params.get("view");
  const id = params.get("id")?.trim();
  if (name === "session" && id) return { name: "session", id };
  if (name === "activity" || name === "knobs") return { name };
  return { name: "sessions" };
}

/** The fragment for a view. */
export function viewHash(v: View): string {
  const params = new URLSearchParams({ view: v.name });
  if (v.name === "session") params.set("id", v.id);
  return `#${params.toString()}`;
}
