// Counting maps for the tracker's window: add to a key (a count that reaches
// zero goes), and the key with the highest count.

/** Adds `by` to a key's count; a count at or below zero removes the key. */
export function bump(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}

/** The key with the highest count (the first one seen on a tie), or null for an empty map. */
export function maxEntry(map: Map<string, number>): [string, number] | null {
  // forEach, not for-of: no [key, value] array per entry on this per-event path.
  let bestKey: string | null = null;
  let bestValue = 0;
  map.forEach((v, k) => {
    if (bestKey === null || v > bestValue) {
      bestKey = k;
      bestValue = v;
    }
  });
  return bestKey === null ? null : [bestKey, bestValue];
}

/** One key's count, with what its first add carried (the caller's note on the key). */
export interface Tally<P> {
  readonly key: string;
  n: number;
  readonly note: P;
  /** Insertion rank: a map's own order, for maxEntry's tie rule. */
  readonly order: number;
}

/**
 * A counting map whose maximum is kept as keys go up and down by one (the
 * window adds one call and drops one on every event): the same answer as
 * maxEntry (highest count, the first inserted on a tie) without a scan per
 * event. A histogram of counts gives the highest count at once; only when
 * the leader itself drops is the map walked, up to the first key at that count.
 */
export class Counter<P> {
  private readonly map = new Map<string, Tally<P>>();
  /** byCount[c]: keys counted c times (grown as counts grow, never holey). */
  private readonly byCount: number[] = new Array(64).fill(0);
  private top = 0;
  private orders = 0;
  private leader: Tally<P> | null = null;

  get size(): number {
    return this.map.size;
  }

  has(key: string): boolean {
    return this.map.has(key);
  }

  /** Counts one more `key`; `note` is kept from the add that inserted it. */
  add(key: string, note: P): void {
    let t = this.map.get(key);
    if (t) t.n++;
    else {
      t = { key, n: 1, note, order: this.orders++ };
      this.map.set(key, t);
    }
    const counts = this.byCount;
    if (t.n >= counts.length) counts.push(0);
    if (t.n > 1) counts[t.n - 1] = (counts[t.n - 1] as number) - 1;
    counts[t.n] = (counts[t.n] as number) + 1;
    if (t.n > this.top) this.top = t.n;
    const lead = this.leader;
    if (lead && t !== lead && (t.n > lead.n || (t.n === lead.n && t.order < lead.order))) this.leader = t;
  }

  /** Counts one less `key` (an unknown key is ignored); at zero the key goes. */
  remove(key: string): void {
    const t = this.map.get(key);
    if (!t) return;
    const counts = this.byCount;
    counts[t.n] = (counts[t.n] as number) - 1;
    t.n--;
    if (t.n > 0) counts[t.n] = (counts[t.n] as number) + 1;
    else this.map.delete(key);
    // the histogram moves by one: the top count falls by at most one
    if (this.byCount[this.top] === 0) this.top--;
    // any other key leads still: it was ahead of this one, which only fell
    if (t === this.leader) this.leader = null;
  }

  clear(): void {
    this.map.clear();
    for (let c = 1; c <= this.top; c++) this.byCount[c] = 0;
    this.top = 0;
    this.leader = null;
  }

  /** The key with the highest count, the first inserted on a tie; null when empty. */
  max(): Readonly<Tally<P>> | null {
    if (this.top === 0) return null;
    if (!this.leader) {
      // insertion order is the map's order: the first key at the top count leads
      for (const t of this.map.values()) {
        if (t.n === this.top) {
          this.leader = t;
          break;
        }
      }
    }
    return this.leader;
  }
}
