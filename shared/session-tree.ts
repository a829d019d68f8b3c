// Session trees from parent links: which root a session belongs to, and the
// depth-first order a tree is shown in. One rule for parent cycles (bad
// data), used by the replay, the sweep and the admin page alike: the cycle is
// cut at its smallest id, which then counts as a root.

export interface Linked {
  id: string;
  parentId: string | null;
}

/**
 * The root reached from `id` along `parentOf` (null or undefined at a root),
 * following at most `maxDepth` links. A cycle is cut at its smallest id.
 */
export function rootBy(
  id: string,
  parentOf: (id: string) => string | null | undefined,
  maxDepth = Number.POSITIVE_INFINITY,
): string {
  const path = [id];
  let cur = id;
  for (let d = 0; d < maxDepth; d++) {
    const up = parentOf(cur);
    if (up === null || up === undefined) return cur;
    const at = path.indexOf(up);
    if (at >= 0) return path.slice(at).sort()[0] as string;
    path.push(up);
    cur = up;
  }
  return cur;
}

/** Each session's root within `sessions`: a parent outside the set makes a root. */
export function rootsWithin<S extends Linked>(sessions: readonly S[]): Map<string, string> {
  const byId = new Map(sessions.map((s) => [s.id, s]));
  const parentIn = (id: string) => {
    const p = byId.get(id)?.parentId ?? null;
    return p !== null && byId.has(p) ? p : null;
  };
  return new Map(sessions.map((s) => [s.id, rootBy(s.id, parentIn)]));
}

/**
 * Sessions grouped into trees, trees in first-seen order, each tree in the
 * input's order.
 */
export function treesOf<S extends Linked>(sessions: readonly S[]): S[][] {
  const roots = rootsWithin(sessions);
  const groups = new Map<string, S[]>();
  for (const s of sessions) {
    const r = roots.get(s.id) as string;
    const g = groups.get(r);
    if (g) g.push(s);
    else groups.set(r, [s]);
  }
  return [...groups.values()];
}

/**
 * One tree's members in display order: `rootId` first when it is a member,
 * then each member under its parent, depth-first, siblings in input order.
 * A member whose parent is not in the tree (or a cycle's cut point) starts at
 * the top, under the root. Every member appears once.
 */
export function depthFirst<S extends Linked>(
  members: readonly S[],
  rootId: string,
): Array<{ node: S; depth: number }> {
  const roots = rootsWithin(members);
  const root = members.find((m) => m.id === rootId);
  const children = new Map<string, S[]>();
  const tops: S[] = [];
  for (const m of members) {
    if (m === root) continue;
    if (roots.get(m.id) === m.id || m.parentId === null) tops.push(m);
    else {
      const list = children.get(m.parentId);
      if (list) list.push(m);
      else children.set(m.parentId, [m]);
    }
  }
  const out: Array<{ node: S; depth: number }> = [];
  const seen = new Set<string>();
  const walk = (n: S, depth: number) => {
    if (seen.has(n.id)) return;
    seen.add(n.id);
    out.push({ node: n, depth });
    for (const c of children.get(n.id) ?? []) walk(c, depth + 1);
  };
  if (root) walk(root, 0);
  for (const t of tops) walk(t, root ? 1 : 0);
  return out;
}
