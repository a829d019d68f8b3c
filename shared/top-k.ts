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
  /** The last top(n) answer, until the next add or clear (signals() asks on every event). */
  private cached: { n: number; result: Array<{ key: string; count: number; label: L }> } | null = null;
  constructor(readonly k: number) {}

  /** Counts one occurrence; returns the (over-)estimated count. */
  add(key: string, label: L): number {
    this.cached = null;
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
    // forEach, not for-of: no [key, value] array per entry (this runs per new key).
    this.counts.forEach((v, k) => {
      if (v.count < min) {
        min = v.count;
        minKey = k;
      }
    });
    this.counts.delete(minKey);
    this.counts.set(key, { count: min + 1, error: min, label });
    return min + 1;
  }

  /** Entries with the highest guaranteed counts first. */
  top(n: number): ReadonlyArray<Readonly<{ key: string; count: number; label: L }>> {
    if (this.cached?.n === n) return this.cached.result;
    const result = this.select(n);
    this.cached = { n, result };
    return result;
  }

  private select(n: number): Array<{ key: string; count: number; label: L }> {
    // One selection pass (this runs on every judged event): the same order as a
    // stable sort by count, descending, without sorting all k entries.
    const best: Array<{ key: string; count: number; label: L }> = [];
    if (n <= 0) return best;
    this.counts.forEach((v, key) => {
      const count = v.count - v.error;
      const last = best[best.length - 1];
      if (best.length === n && last && count <= last.count) return;
      let i = best.length;
      while (i > 0 && (best[i - 1]?.count ?? 0) < count) i--;
      best.splice(i, 0, { key, count, label: v.label });
      if (best.length > n) best.pop();
    });
    return best;
  }

  /** The entry with the highest guaranteed count. */
  max(): { key: string; count: number; label: L } | null {
    let bestKey: string | null = null;
    let best: { count: number; error: number; label: L } | null = null;
    this.counts.forEach((v, key) => {
      if (!best || v.count - v.error > best.count - best.error) {
        best = v;
        bestKey = key;
      }
    });
    const b = best as { count: number; error: number; label: L } | null;
    return b && bestKey !== null ? { key: bestKey, count: b.count - b.error, label: b.label } : null;
  }

  clear(): void {
    this.cached = null;
    this.counts.clear();
  }

  get size(): number {
    return this.counts.size;
  }
}
