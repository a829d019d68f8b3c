/**
 * Space-saving heavy hitters: counts for at most k keys, so memory stays
 * bounded however long a session runs. A key that repeats often is always
 * kept. A newcomer that evicts the smallest entry inherits its count as an
 * over-estimate; that inherited part is kept as the entry's error, and
 * top()/max() report the guaranteed count (count - error), so a call seen
 * once never looks repeated, however many distinct calls came before it.
 */
export class TopK<L> {
  private readonly counts = new Map<string, { count: number; error: number; label: L }>();
  constructor(readonly k: number) {}

  /** Counts one occurrence; returns the (over-)estimated count. */
  add(key: string, label: L): number {
    const hit = this.counts.get(key);
    if (hit) {
      hit.count++;
      return hit.count;
    }
    if (this.counts.size < this.k) {
      this.counts.set(key, { count: 1, error: 0, label });
      return 1;
    }
    let minKey = "";
    let min = Number.POSITIVE_INFINITY;
    for (const [k, v] of this.counts) {
      if (v.count < min) {
        min = v.count;
        minKey = k;
      }
    }
    this.counts.delete(minKey);
    this.counts.set(key, { count: min + 1, error: min, label });
    return min + 1;
  }

  /** Entries with the highest guaranteed counts first. */
  top(n: number): Array<{ key: string; count: number; label: L }> {
    return [...this.counts.entries()]
      .map(([key, v]) => ({ key, count: v.count - v.error, label: v.label }))
      .sort((a, b) => b.count - a.count)
      .slice(0, n);
  }

  /** The entry with the highest guaranteed count. */
  max(): { key: string; count: number; label: L } | null {
    let best: { key: string; count: number; label: L } | null = null;
    for (const [key, v] of this.counts) {
      const count = v.count - v.error;
      if (!best || count > best.count) best = { key, count, label: v.label };
    }
    return best;
  }

  clear(): void {
    this.counts.clear();
  }

  get size(): number {
    return this.counts.size;
  }
}
