// Test support (not bundled): a timer that fires only when told, so tests of
// bounded waits drive time by hand instead of sleeping.
import type { Timer } from "./observation-queue.ts";

export function manualTimer() {
  const live = new Set<{ ms: number; fn: () => void }>();
  const timer: Timer = (ms, fn) => {
    const t = { ms, fn };
    live.add(t);
    return () => live.delete(t);
  };
  return {
    timer,
    /** The delays of the timers set and not yet fired or cancelled. */
    get armed(): number[] {
      return [...live].map((t) => t.ms);
    },
    fireAll(): void {
      for (const t of [...live]) {
        live.delete(t);
        t.fn();
      }
    },
  };
}
