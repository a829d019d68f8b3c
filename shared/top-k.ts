/**
 * Space-saving heavy hitters: counts for at most k keys, so memory stays
 * bounded however long a session runs. A key that repeats often is always
 * kept. A newcomer that evicts the smallest entry inherits its count as an
 * over-estimate; that inherited part is kept as the entry's error, and
 * top()/max() report the guaranteed count (count - error), so a call seen
 * once never looks repeated, however many distinct calls came before it.
 * Both answers are kept up to date as keys come (the tracker asks on every
 * event), and the smallest count is known without a scan on most evictions.
 */
interface Slot<L> {
  key: string;
  count: number;
  error: number;
  label: L;
  /** Insertion rank: the map's own order, so ties go to the older key as a stable sort would. */
  order: number;
}

type Entry<L> = { key: string; count: number; label: L };

/** Higher guaranteed count first, then the older key. */
function before<L>(a: Slot<L>, b: Slot<L>): boolean {
  const ga = a.count - a.error;
  const gb = b.count - b.error;
  return ga > gb || (ga === gb && a.order < b.order);
}

export interface TopKOptions {
  /** top() and max() report only keys with at least this guaranteed count (default 1: every key). */
  atLeast?: number;
}

export class TopK<L> {
  private readonly counts = new Map<string, Slot<L>>();
  private readonly atLeast: number;
  private orders = 0;
  /** The smallest raw count and how many slots have it; valid only while minKnown. */
  private min = 0;
  private atMin = 0;
  private minKnown = false;
  /**
   * The best `leadN` reportable slots in top() order, kept up to date by add():
   * null until asked.
   */
  private lead: Array<Slot<L>> | null = null;
  private leadN = 0;
  /** The last top() answer, until the lead changes. */
  private view: Array<Entry<L>> | null = null;
  private rev = 0;

  constructor(
    readonly k: number,
    opts: TopKOptions = {},
  ) {
    this.atLeast = opts.atLeast ?? 1;
  }

  /** Changes whenever top() or max() may answer differently: a caller keeps what it made of them until then. */
  get revision(): number {
    return this.rev;
  }

  /** Counts one occurrence; returns the (over-)estimated count. */
  add(key: string, label: L): number {
    const hit = this.counts.get(key);
    if (hit) {
      if (this.minKnown && hit.count === this.min && --this.atMin === 0) this.minKnown = false;
      hit.count++;
      this.promote(hit);
      return hit.count;
    }
    let min = 0;
    if (this.counts.size >= this.k) min = this.evictMin();
    // a newcomer's count (min + 1) is above the smallest, except in a map it alone fills
    else this.minKnown = false;
    const slot = { key, count: min + 1, error: min, label, order: this.orders++ };
    this.counts.set(key, slot);
    this.promote(slot);
    return slot.count;
  }

  /** Drops the first key (in insertion order) with the smallest count; returns that count. */
  private evictMin(): number {
    if (!this.minKnown) this.findMin();
    let gone: Slot<L> | null = null;
    for (const v of this.counts.values()) {
      if (v.count === this.min) {
        gone = v;
        break;
      }
    }
    // k = 0: nothing to evict, as the space-saving rule had it
    if (!gone) return Number.POSITIVE_INFINITY;
    this.counts.delete(gone.key);
    if (--this.atMin === 0) this.minKnown = false;
    const i = this.lead ? this.lead.indexOf(gone) : -1;
    if (this.lead && i >= 0) {
      // the best reportable slot left outside the lead takes the last place
      this.lead.splice(i, 1);
      const next = this.bestOutside(this.lead);
      if (next) this.lead.push(next);
      this.changed();
    }
    return gone.count;
  }

  private findMin(): void {
    let min = Number.POSITIVE_INFINITY;
    let at = 0;
    for (const v of this.counts.values()) {
      if (v.count < min) {
        min = v.count;
        at = 1;
      } else if (v.count === min) at++;
    }
    this.min = min;
    this.atMin = at;
    this.minKnown = at > 0;
  }

  private bestOutside(lead: ReadonlyArray<Slot<L>>): Slot<L> | null {
    let best: Slot<L> | null = null;
    for (const v of this.counts.values()) {
      if (v.count - v.error >= this.atLeast && (!best || before(v, best)) && !lead.includes(v)) best = v;
    }
    return best;
  }

  private changed(): void {
    this.view = null;
    this.rev++;
  }

  /** A slot's count went up (or it is new): moves it into or up the lead. */
  private promote(s: Slot<L>): void {
    const lead = this.lead;
    if (!lead) {
      this.rev++;
      return;
    }
    if (s.count - s.error < this.atLeast) return;
    let i = lead.indexOf(s);
    if (i < 0) {
      // A full lead keeps its members unless the slot now beats the last one.
      if (lead.length >= this.leadN) {
        const last = lead[lead.length - 1];
        if (!last || !before(s, last)) return;
        lead.pop();
      }
      lead.push(s);
      i = lead.length - 1;
    }
    while (i > 0 && before(s, lead[i - 1] as Slot<L>)) {
      lead[i] = lead[i - 1] as Slot<L>;
      i--;
    }
    lead[i] = s;
    this.changed();
  }

  /** Reportable entries with the highest guaranteed counts first (ties: the older key first). */
  top(n: number): ReadonlyArray<Readonly<Entry<L>>> {
    if (!this.lead || this.leadN !== n) {
      this.lead = this.select(n);
      this.leadN = n;
      this.changed();
    }
    if (!this.view)
      this.view = this.lead.map((s) => ({ key: s.key, count: s.count - s.error, label: s.label }));
    return this.view;
  }

  private select(n: number): Array<Slot<L>> {
    // One selection pass: the same order as a stable sort, without sorting all k entries.
    const best: Array<Slot<L>> = [];
    if (n <= 0) return best;
    for (const v of this.counts.values()) {
      if (v.count - v.error < this.atLeast) continue;
      const last = best[best.length - 1];
      if (best.length === n && last && !before(v, last)) continue;
      let i = best.length;
      while (i > 0 && before(v, best[i - 1] as Slot<L>)) i--;
      best.splice(i, 0, v);
      if (best.length > n) best.pop();
    }
    return best;
  }

  /** The reportable entry with the highest guaranteed count (the older key on a tie). */
  max(): Readonly<Entry<L>> | null {
    // The first of any kept lead is the maximum: no second lead for max().
    return this.top(this.lead && this.leadN > 0 ? this.leadN : 1)[0] ?? null;
  }

  clear(): void {
    this.counts.clear();
    this.minKnown = false;
    // An empty lead holds every (no) entry: adds keep it current from here.
    if (this.lead) this.lead = [];
    this.changed();
  }

  get size(): number {
    return this.counts.size;
  }
}
