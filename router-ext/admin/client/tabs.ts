// The admin page's tabs, kept in the URL fragment (never sent to the server), so
// a session page can be bookmarked and the back button works (the key stays
// "view", so bookmarks from before the word "tab" still open):
//   #view=sessions (default), #view=session&id=<session>, #view=activity, #view=knobs.
// The fragment may also carry the admin token once (#token=...), read and removed by main.ts.

export type Tab =
  | { name: "sessions" }
  | { name: "session"; id: string }
  | { name: "activity" }
  | { name: "knobs" };

export type TabName = Tab["name"];

/** The tab a fragment names; anything unknown is the Sessions readout. */
export function parseTab(hash: string): Tab {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const name = params.get("view");
  const id = params.get("id")?.trim();
  if (name === "session" && id) return { name: "session", id };
  if (name === "activity" || name === "knobs") return { name };
  return { name: "sessions" };
}

/** The fragment for a tab. */
export function tabHash(v: Tab): string {
  const params = new URLSearchParams({ view: v.name });
  if (v.name === "session") params.set("id", v.id);
  return `#${params.toString()}`;
}
