// Observations into the core's judge (SessionForest, children rolled up into
// their root) in the order the hooks saw them, and each verdict change out:
// a /progress report with its incident report, and for stalling or looping a
// toast. An observation behind a bash call that waits for its work-tree probe
// waits too (observation-queue.ts), so the judge sees them in replay's order.
import {
  incidentReport,
  type Observation,
  type SessionForest,
  toTransition,
  type VerdictChange,
} from "../shared/index.ts";
import { ObservationQueue, type Timer } from "./observation-queue.ts";
import type { Reporter } from "./reporter.ts";
import { type Toast, toastFor } from "./toast.ts";

/** Transitions kept for tests and the bench, newest last. */
const KEPT = 200;

export interface VerdictFlowOptions {
  forest: SessionForest;
  reporter: Reporter;
  toast: (toast: Toast) => void;
  onError: (err: unknown) => void;
  version: string;
  /** Longest a bash call's observation (and everything after it) waits for its probe. */
  probeWaitMs: number;
  timer?: Timer;
}

export class VerdictFlow {
  /** Every transition, newest last (bounded), for tests and the bench. */
  readonly transitions: VerdictChange[] = [];
  count = 0;
  private readonly queue: ObservationQueue;

  constructor(private readonly o: VerdictFlowOptions) {
    this.queue = new ObservationQueue({
      waitMs: o.probeWaitMs,
      ...(o.timer ? { timer: o.timer } : {}),
      onError: o.onError,
    });
  }

  /** Observations waiting behind a work-tree probe. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Judges an observation now, or after the probes that arrived before it. */
  observe(obs: Observation): void {
    if (this.queue.length === 0) this.apply(obs);
    else this.queue.push(() => this.apply(obs));
  }

  /** An observation made once its probe answers (null: no answer in time), in arrival order. */
  observeAfter<T>(answer: Promise<T | null>, make: (answer: T | null) => Observation): void {
    this.queue.pushWaiting(answer, (got) => this.apply(make(got)));
  }

  /** Resolves once every observation that waits for a probe has been judged. */
  settled(): Promise<void> {
    return this.queue.drained();
  }

  private apply(obs: Observation): void {
    const { changes } = this.o.forest.observe(obs);
    for (const c of changes) this.onChange(c);
  }

  private onChange(c: VerdictChange): void {
    this.count++;
    this.transitions.push(c);
    if (this.transitions.length > KEPT) this.transitions.shift();
    const report = incidentReport(c);
    const pluginVersion = this.o.version.slice(0, 64) || "dev";
    this.o.reporter.enqueue(toTransition(c, { source: "plugin", report, pluginVersion }));
    const toast = toastFor(c);
    if (toast) this.o.toast(toast);
  }
}
