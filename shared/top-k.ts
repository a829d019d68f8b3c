/**
 * Space-saving heavy hitters: counts for at most k keys, so memory stays
 * bounded however long a session runs. A key that repeats often is always
 * kept; its count may over-estimate by at most the smallest count evicted.
 */
export class TopK<L> {
  private readonly counts = new Map<string, { count: number; label: L }>();
  constructor(readonly k: number) {}

  add(key: string, label: L): number {
    const hit = this.counts.get(key);
    if (hit) {
      hit.count++;
      return hit.count;
    }
    if (this.counts.size < this.k) {
      this.counts.set(key, { count: 1, label });
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
    this.counts.set(key, { count: min + 1, label });
    return min + 1;
  }

  /** Entries with the highest counts first. */
  top(n: number): Array<{ key: string; count: number; label: L }> {
    return [...this.counts.entries()]
      .map(([key, v]) => ({ key, count: v.count, label: v.label }))
      .sort((a, b) => b.count - a.count)
      .slice(0, n);
  }

  max(): { key: string; count: number; label: L } | null {
    let best: { key: string; count: number; label: L } | null = null;
    for (const [key, v] of this.counts)
      if (!best || v.count > best.count) best = { key, count: v.count, label: v.label };
    return best;
  }

  clear(): void {
    this.counts.clear();
  }

  get size(): number {
    return this.counts.size;
  }
}
