// The breaker's writes, off the gate's path: the service changes its in-memory
// states at once (the gate routes from them) and hands the durable copy here.
// Writes run one after another, in order. A failed write never reaches a model
// request: it is counted, logged once per run of failures, and a state that
// did not save is saved again on the next retry (the newest state per model).
import type { BreakerPhase } from "./state.ts";
import type { BreakerStore, NewTrip, StoredState } from "./store.ts";

interface Unsaved {
  next: StoredState;
  prevPhase: BreakerPhase;
  by: string;
}

export class BreakerWrites {
  /** Writes that failed since the start (each retry that fails counts again). */
  failures = 0;
  private failing = false;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly unsaved = new Map<string, Unsaved>();

  constructor(
    private readonly store: BreakerStore,
    private readonly log: (line: string) => void,
  ) {}

  /** Models whose newest state is not stored yet. */
  pending(model: string): boolean {
    return this.unsaved.has(model);
  }

  /** Saves a model's state (and its phase change); whether it was stored. */
  async save(next: StoredState, prevPhase: BreakerPhase, by: string): Promise<boolean> {
    const ok = await this.serial(`save ${next.model}`, async () => {
      await this.store.save(next, prevPhase, by);
      this.unsaved.delete(next.model);
    });
    if (!ok) this.keep(next, prevPhase, by);
    return ok;
  }

  /** Records a trip with the state it opened; its seq, or null when it could not be stored. */
  async recordTrip(trip: NewTrip, next: StoredState): Promise<number | null> {
    let seq: number | null = null;
    const ok = await this.serial(`trip ${trip.model}`, async () => {
      seq = await this.store.recordTrip(trip, next);
      this.unsaved.delete(next.model);
    });
    // The trip's row is lost (counted); its state is kept for the retry.
    if (!ok) this.keep(next, trip.previous, "breaker");
    return seq;
  }

  /** Keeps the newest unsaved state of a model, with the phase it was stored in last. */
  private keep(next: StoredState, prevPhase: BreakerPhase, by: string): void {
    const stored = this.unsaved.get(next.model)?.prevPhase ?? prevPhase;
    this.unsaved.set(next.model, { next, prevPhase: stored, by });
  }

  /** Saves again every state that did not save. */
  async retry(): Promise<void> {
    for (const u of [...this.unsaved.values()]) {
      this.unsaved.delete(u.next.model);
      await this.save(u.next, u.prevPhase, u.by);
    }
  }

  /** Resolves once every write handed in so far is done. */
  async idle(): Promise<void> {
    await this.tail.catch(() => {});
  }

  private serial(what: string, work: () => Promise<void>): Promise<boolean> {
    const out = this.tail.then(work).then(
      () => {
        if (this.failing) this.log(`breaker: writes work again (${this.failures} failed so far)`);
        this.failing = false;
        return true;
      },
      (err: unknown) => {
        this.failures++;
        if (!this.failing) this.log(`breaker: ${what} not stored: ${(err as Error).message}; retried later`);
        this.failing = true;
        return false;
      },
    );
    this.tail = out;
    return out;
  }
}
