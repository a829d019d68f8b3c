// The Sessions readout: one tbody per session tree, root first, children
// indented, a Stop and a Resume button per tree, the tree's folder and start
// and whether it still runs; each session links to its session page and shows
// its title, current figures and an admin's mark. Refused, flagged and marked
// trees come first (trees.ts treeOrder). Rebuilt on every refresh.
import { button, h, replace } from "./dom.ts";
import { fmtAgo, fmtInt, fmtTime, fmtUsd, toMs } from "./format.ts";
import { pluginState, treeState } from "./liveness.ts";
import { markWords, wasFlagged } from "./mark-words.ts";
import { PLUGIN_TITLE } from "./plugin-state.ts";
import type { SessionView } from "./schemas.ts";
import { tabHash } from "./tabs.ts";
import { groupTrees, type Tree, treeOrder, verdictRank } from "./trees.ts";

export interface SessionsContext {
  now: number;
  /** The router's version: a plugin reporting another one is marked stale. */
  serverVersion: string | null;
  hideOk: boolean;
  stop(rootId: string): Promise<void>;
  resume(rootId: string): Promise<void>;
}

const COLUMNS = [
  "session",
  "agent",
  "verdict",
  "stage",
  "calls",
  "turns since landed",
  "$ since landed",
  "context tokens",
  "top target",
  "source",
  "plugin",
  "refused / stopped",
  "mark",
];
/** Columns of numbers: their headers are right-aligned like the numbers. */
const NUMERIC = new Set(["calls", "turns since landed", "$ since landed", "context tokens"]);

function isQuiet(tree: Tree<SessionView>): boolean {
  return tree.rows.every(
    ({ row }) => row.verdict === "ok" && verdictRank(row.worst) === 0 && row.flags === 0 && !row.refused,
  );
}

function spendTitle(r: SessionView): string | null {
  return r.spend_source
    ? `from ${r.spend_source === "gate" ? "the gate's request records" : "the reporter"}`
    : null;
}

function verdictCell(r: SessionView): HTMLTableCellElement {
  const td = h(
    "td",
    { class: "verdict" },
    h("span", { class: `v v-${r.verdict.replace(/[^a-z_]/g, "")}` }, r.verdict),
  );
  if (r.reason && r.verdict !== "ok") td.append(" ", h("span", { class: "dim" }, `(${r.reason})`));
  if (r.verdict !== "ok" || r.flags > 0)
    td.append(
      " ",
      h(
        "a",
        {
          href: tabHash({ name: "session", id: r.session_id }),
          class: "why",
          title: "the session page",
        },
        "why?",
      ),
    );
  if ((r.worst !== null && r.worst !== r.verdict) || r.flags > 0)
    td.append(h("br"), h("span", { class: "dim" }, `worst ${r.worst ?? "-"}, flagged ${r.flags}x`));
  return td;
}

function pluginCell(r: SessionView, serverVersion: string | null): HTMLTableCellElement {
  // A router run from a checkout reports "dev": it has no release to compare against.
  const stale =
    r.plugin_version !== null &&
    serverVersion !== null &&
    serverVersion !== "dev" &&
    r.plugin_version !== serverVersion;
  const state = pluginState(r);
  return h(
    "td",
    {
      class: state === "live" ? "live" : state === "headers only" ? "warn" : "dead",
      "data-plugin": state,
      title: PLUGIN_TITLE[state],
    },
    state,
    r.plugin_version ? ` ${r.plugin_version}` : "",
    stale ? h("span", { class: "stale", title: `router is ${serverVersion}` }, " (stale)") : null,
  );
}

function stoppedCell(r: SessionView, now: number): HTMLTableCellElement {
  const td = h("td", {}, r.refused ? h("span", { class: "refused" }, "refused") : "-");
  if (r.stopped_by !== null || r.stopped_at !== null)
    td.append(
      h("br"),
      h(
        "span",
        { class: "dim", title: fmtTime(r.stopped_at) },
        `${r.refused ? "stopped" : "last stop"} by ${r.stopped_by ?? "?"} ${fmtAgo(r.stopped_at, now)}`,
      ),
    );
  return td;
}

function markCell(r: SessionView, now: number): HTMLTableCellElement {
  const m = r.mark;
  if (!m) return h("td", { class: "mark" }, "-");
  return h(
    "td",
    { class: "mark", "data-mark": m.kind, title: fmtTime(m.at) },
    h("span", { class: m.kind }, markWords(m.kind, wasFlagged(r))),
    h("br"),
    h("span", { class: "dim" }, `${m.by} ${fmtAgo(m.at, now)}`),
  );
}

function sessionRows(tree: Tree<SessionView>, ctx: SessionsContext): HTMLTableRowElement[] {
  const out: HTMLTableRowElement[] = [];
  for (const { row: r, depth } of tree.rows) {
    const idCell = h(
      "td",
      { class: "sid", title: r.session_id },
      depth > 0 ? h("span", { class: "dim" }, "+- ") : null,
      h(
        "a",
        {
          href: tabHash({ name: "session", id: r.session_id }),
          class: "session-link",
        },
        r.session_id,
      ),
      r.session_id === tree.rootId ? h("span", { class: "dim" }, " (root)") : null,
      r.title ? h("div", { class: "title", "data-title": "", title: r.title }, r.title) : null,
    );
    idCell.style.paddingLeft = `${0.4 + depth * 1.6}em`;
    out.push(
      h(
        "tr",
        {
          class: `session v-row-${r.verdict.replace(/[^a-z_]/g, "")}`,
          "data-session": r.session_id,
          "data-verdict": r.verdict,
        },
        idCell,
        h("td", {}, r.agent ?? "-"),
        verdictCell(r),
        r.cannot_act
          ? h(
              "td",
              {
                class: "warn",
                "data-cannot-act": r.cannot_act,
                title: r.cannot_act,
              },
              `${r.stage ?? "-"}, cannot act: ${r.cannot_act}`,
            )
          : h("td", {}, r.stage ?? "-"),
        h("td", { class: "num", "data-field": "calls" }, fmtInt(r.calls)),
        h("td", { class: "num", title: spendTitle(r) }, fmtInt(r.turns_since_landed)),
        h("td", { class: "num", title: spendTitle(r) }, fmtUsd(r.usd_since_landed)),
        h("td", { class: "num" }, fmtInt(r.context_tokens)),
        h(
          "td",
          { class: "target" },
          r.top_target ?? "-",
          r.top_target ? h("span", { class: "count" }, ` x${fmtInt(r.top_target_count ?? 0)}`) : null,
        ),
        h("td", {}, r.source),
        pluginCell(r, ctx.serverVersion),
        stoppedCell(r, ctx.now),
        markCell(r, ctx.now),
      ),
    );
  }
  return out;
}

/** Where the tree runs and since when: the folder and creation time of its root (or its first session). */
function treeAbout(tree: Tree<SessionView>): string {
  const root = tree.rows.find(({ row }) => row.session_id === tree.rootId)?.row ?? tree.rows[0]?.row;
  const parts = [
    root?.directory ?? null,
    root?.created_at ? `started ${fmtTime(root.created_at)}` : null,
  ].filter((p): p is string => p !== null);
  return parts.length ? ` - ${parts.join(", ")}` : "";
}

function treeHead(tree: Tree<SessionView>, ctx: SessionsContext): HTMLTableRowElement {
  const state = treeState(tree.rows.map(({ row }) => row));
  const refused = state === "stopped";
  const ended = tree.rows.every(({ row }) => row.ended === true);
  const stopper = tree.rows.find(({ row }) => row.refused && row.stopped_by !== null)?.row;
  const lastHeard = Math.max(0, ...tree.rows.map(({ row }) => toMs(row.last_seen_at) ?? 0));
  const text = refused
    ? `${stopper ? `refused: stopped by ${stopper.stopped_by} at ${fmtTime(stopper.stopped_at)}` : "refused"}${ended ? ", ended" : ""}`
    : state === "ended"
      ? `ended (last heard ${fmtAgo(lastHeard, ctx.now)})`
      : "running";
  return h(
    "tr",
    { class: "tree-head" },
    h(
      "th",
      { colspan: COLUMNS.length, scope: "rowgroup" },
      h("span", { class: "tree-id" }, `tree ${tree.rootId}`),
      tree.rootPresent ? null : h("span", { class: "dim" }, " (root not reported)"),
      h("span", { class: "dim" }, ` - ${tree.rows.length} session${tree.rows.length === 1 ? "" : "s"}`),
      h("span", { class: "dim tree-about" }, treeAbout(tree)),
      h("span", { class: "dim" }, " - "),
      h(
        "span",
        {
          class: `state ${refused ? "refused" : state}`,
          "data-state": state,
          title: fmtTime(lastHeard),
        },
        text,
      ),
      " ",
      button("Stop tree", () => ctx.stop(tree.rootId), {
        class: "stop",
        disabled: refused,
      }),
      " ",
      button("Resume tree", () => ctx.resume(tree.rootId), {
        class: "resume",
        disabled: !refused,
      }),
    ),
  );
}

/** Renders the readout into `table`; returns counts for the header summary. */
export function renderSessions(
  table: HTMLTableElement,
  rows: SessionView[],
  ctx: SessionsContext,
): { trees: number; hidden: number; flagged: number; refusedTrees: number } {
  const trees = groupTrees(rows).sort(treeOrder);
  const shown = ctx.hideOk ? trees.filter((t) => !isQuiet(t)) : trees;
  const head = h(
    "thead",
    {},
    h("tr", {}, ...COLUMNS.map((c) => h("th", { scope: "col", class: NUMERIC.has(c) ? "num" : null }, c))),
  );
  const bodies = shown.map((t) =>
    h("tbody", { class: "tree", "data-root": t.rootId }, treeHead(t, ctx), ...sessionRows(t, ctx)),
  );
  if (shown.length === 0)
    bodies.push(
      h(
        "tbody",
        {},
        h(
          "tr",
          {},
          h(
            "td",
            { colspan: COLUMNS.length, class: "dim" },
            trees.length ? `no flagged trees (${trees.length} ok hidden)` : "no sessions",
          ),
        ),
      ),
    );
  replace(table, head, ...bodies);
  return {
    trees: trees.length,
    hidden: trees.length - shown.length,
    flagged: rows.filter((r) => verdictRank(r.verdict) > 0).length,
    refusedTrees: trees.filter((t) => t.rows.some(({ row }) => row.refused)).length,
  };
}
