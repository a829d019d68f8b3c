// Failures of one exact call since its last success. Keyed by the exact call
// (its fingerprint): retries that vary (a different edit each time) are
// attempts, the same call failing again and again is a loop.
import { maxEntry } from "./counts.ts";

export class FailStreaks {
  private readonly counts = new Map<string, number>();
  /** The normalized key of each call with a streak, for the report's target. */
  private readonly nfps = new Map<string, string>();

  /** A finished call: a failure extends its streak, a success ends it. */
  record(fp: string, nfp: string, failed: boolean): void {
    if (failed) {
      this.counts.set(fp, (this.counts.get(fp) ?? 0) + 1);
      this.nfps.set(fp, nfp);
    } else this.forget(fp);
  }

  /** The call left the window (or succeeded): its streak goes. */
  forget(fp: string): void {
    this.counts.delete(fp);
    this.nfps.delete(fp);
  }

  clear(): void {
    this.counts.clear();
    this.nfps.clear();
  }

  /** The longest streak and its call's normalized key, or null. */
  max(): { count: number; nfp: string | undefined } | null {
    const top = maxEntry(this.counts);
    return top ? { count: top[1], nfp: this.nfps.get(top[0]) } : null;
  }
}
