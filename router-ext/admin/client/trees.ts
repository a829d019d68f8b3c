// Groups session rows into trees: the root first, then each child under its
// parent, depth-first. Pure, so it is unit-tested without a browser.

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

/** Trees in first-seen order; within a tree, siblings keep their input order. Cycles are cut. */
export function groupTrees<R extends TreeNode>(rows: readonly R[]): Tree<R>[] {
  const byRoot = new Map<string, R[]>();
  for (const r of rows) {
    const list = byRoot.get(r.root_id);
    if (list) list.push(r);
    else byRoot.set(r.root_id, [r]);
  }
  const trees: Tree<R>[] = [];
  for (const [rootId, members] of byRoot) {
    const ids = new Set(members.map((m) => m.session_id));
    const children = new Map<string, R[]>();
    const tops: R[] = [];
    const root = members.find((m) => m.session_id === rootId);
    for (const m of members) {
      if (m === root) continue;
      const parent =
        m.parent_id !== null && m.parent_id !== m.session_id && ids.has(m.parent_id) ? m.parent_id : null;
      if (parent === null) tops.push(m);
      else {
        const list = children.get(parent);
        if (list) list.push(m);
        else children.set(parent, [m]);
      }
    }
    const out: TreeRow<R>[] = [];
    const seen = new Set<string>();
    const walk = (r: R, depth: number) => {
      if (seen.has(r.session_id)) return;
      seen.add(r.session_id);
      out.push({ row: r, depth });
      for (const c of children.get(r.session_id) ?? []) walk(c, depth + 1);
    };
    if (root) walk(root, 0);
    for (const t of tops) walk(t, root ? 1 : 0);
    // Rows only reachable through a cycle (a -> b -> a): show them rather than drop them.
    for (const m of members) walk(m, root ? 1 : 0);
    trees.push({ rootId, rootPresent: root !== undefined, rows: out });
  }
  return trees;
}

const VERDICT_RANK: Record<string, number> = { looping: 2, stalling: 1 };

/** A verdict's weight for sorting and colouring: looping > stalling > anything else. */
export function verdictRank(verdict: string | null): number {
  return verdict === null ? 0 : (VERDICT_RANK[verdict] ?? 0);
}
