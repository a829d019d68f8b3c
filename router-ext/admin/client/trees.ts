// Groups session rows into trees: the root first, then each child under its
// parent, depth-first. Pure, so it is unit-tested without a browser.
import { depthFirst } from "../../../shared/session-tree.ts";
import { toMs } from "./format.ts";

export interface TreeNode {
  session_id: string;
  parent_id: string | null;
  root_id: string;
}

export interface TreeRow<R> {
  row: R;
  depth: number;
}

export interface Tree<R> {
  rootId: string;
  /** False when the root session itself is not among the rows (only its children reported). */
  rootPresent: boolean;
  rows: TreeRow<R>[];
}

/**
 * Trees in first-seen order of their root id; within a tree, the shared
 * depth-first order (shared/session-tree.ts), so the page cuts a parent cycle
 * where the replay does.
 */
export function groupTrees<R extends TreeNode>(rows: readonly R[]): Tree<R>[] {
  const byRoot = new Map<string, R[]>();
  for (const r of rows) {
    const list = byRoot.get(r.root_id);
    if (list) list.push(r);
    else byRoot.set(r.root_id, [r]);
  }
  return [...byRoot].map(([rootId, members]) => ({
    rootId,
    rootPresent: members.some((m) => m.session_id === rootId),
    rows: depthFirst(
      members.map((row) => ({ id: row.session_id, parentId: row.parent_id, row })),
      rootId,
    ).map(({ node, depth }) => ({ row: node.row, depth })),
  }));
}

const VERDICT_RANK: Record<string, number> = { looping: 2, stalling: 1 };

/** A verdict's weight for sorting and colouring: looping > stalling > anything else. */
export function verdictRank(verdict: string | null): number {
  return verdict === null ? 0 : (VERDICT_RANK[verdict] ?? 0);
}

/** What ordering the readout needs to know about a session row. */
export interface AttentionRow {
  verdict: string;
  worst: string | null;
  flags: number;
  refused: boolean;
  mark?: unknown;
  last_seen_at: number;
}

/**
 * How much a row asks for an admin's eye: refused 4, looping 3, stalling 2,
 * flagged before or marked 1, else 0. The readout lists those trees first, so
 * a volume of quiet sessions never pushes one down out of sight.
 */
export function attentionRank(r: AttentionRow): number {
  if (r.refused) return 4;
  const now = verdictRank(r.verdict);
  if (now > 0) return now + 1;
  return verdictRank(r.worst) > 0 || r.flags > 0 || (r.mark !== null && r.mark !== undefined) ? 1 : 0;
}

/** Trees by their most urgent row, then most recently seen. */
export function treeOrder<R extends TreeNode & AttentionRow>(a: Tree<R>, b: Tree<R>): number {
  const weight = (t: Tree<R>) => Math.max(0, ...t.rows.map(({ row }) => attentionRank(row)));
  const seen = (t: Tree<R>) => Math.max(0, ...t.rows.map(({ row }) => toMs(row.last_seen_at) ?? 0));
  return weight(b) - weight(a) || seen(b) - seen(a);
}
