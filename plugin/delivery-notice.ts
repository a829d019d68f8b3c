// When the plugin says that its reports do not reach the router: once per
// failing stretch (a toast in the TUI and a line in opencode's log, naming
// the URL it tries), after the failures have lasted `graceMs` (a router
// restart of a second says nothing), and again only after a delivery in
// between. The reports themselves stay queued (reporter.ts). DeliveryNotice
// decides (the clock comes in with each call); DeliveryWatch says it.
import { describeUrlSource } from "../io/router-link.ts";
import type { OpencodeUi } from "./opencode-ui.ts";
import type { Delivery } from "./reporter.ts";
import type { Settings } from "./settings.ts";
import type { Toast } from "./toast.ts";

/** What the chat.headers hook tells the gate about delivery: nothing sent yet, delivering, or failing. */
export type ReportState = "pending" | "ok" | "failing";

export interface NoticeText {
  toast: Toast;
  log: string;
}

export class DeliveryNotice {
  private failingSince: number | null = null;
  private warned = false;
  private delivered = false;

  constructor(private readonly graceMs: number = 5000) {}

  /** When the current failing stretch began; null while delivering. */
  get since(): number | null {
    return this.failingSince;
  }

  get state(): ReportState {
    if (this.failingSince !== null) return "failing";
    return this.delivered ? "ok" : "pending";
  }

  /**
   * One send's outcome at `now`. Returns "warn" when the warning is due
   * (the first failure of a stretch that has lasted graceMs), "recovered" on
   * the first delivery after a warning, else null.
   */
  record(d: Delivery, now: number): "warn" | "recovered" | null {
    if (d.ok) {
      const was = this.warned;
      this.failingSince = null;
      this.warned = false;
      this.delivered = true;
      return was ? "recovered" : null;
    }
    this.failingSince ??= now;
    if (this.warned || now - this.failingSince < this.graceMs) return null;
    this.warned = true;
    return "warn";
  }
}

/** The warning's words: the URL tried, why it failed, where the URL came from, what is kept, what to do. */
export function undeliveredText(
  d: Extract<Delivery, { ok: false }>,
  o: { since: number; queued: number; urlFrom: string },
): NoticeText {
  const kept = `${o.queued} report(s) kept and sent when it answers`;
  return {
    toast: {
      title: "stallguard: reports do not reach the router",
      message:
        `${d.url}/progress: ${d.reason}; ${kept}. Start stallguard serve, or set STALLGUARD_URL where opencode starts.`.slice(
          0,
          500,
        ),
      variant: "warning",
      duration: 15_000,
    },
    log: `cannot deliver reports to ${d.url}/progress since ${new Date(o.since).toISOString()} (${d.reason}); ${kept}; the URL is ${o.urlFrom}`,
  };
}

/** The shell: records each send and shows or logs what the notice decides. */
export class DeliveryWatch {
  readonly notice: DeliveryNotice;

  constructor(
    private readonly o: {
      graceMs?: number | undefined;
      now: () => number;
      ui: OpencodeUi;
      /** Shows a toast (the plugin's toasts setting applies). */
      toast: (t: Toast) => void;
      /** Reports waiting in the queue now. */
      queued: () => number;
      /** Where the router URL comes from, named in the warning ("from STALLGUARD_URL", ...). */
      settings: Pick<Settings, "routerUrl" | "linkPath">;
    },
  ) {
    this.notice = new DeliveryNotice(o.graceMs);
  }

  record(d: Delivery): void {
    const now = this.o.now();
    const said = this.notice.record(d, now);
    if (said === "recovered")
      this.o.ui.log("info", "progress_delivered", `reports reach ${d.url}/progress again`, true);
    if (said !== "warn" || d.ok) return;
    const text = undeliveredText(d, {
      since: this.notice.since ?? now,
      queued: this.o.queued(),
      urlFrom: describeUrlSource(this.o.settings.routerUrl().source, this.o.settings.linkPath),
    });
    this.o.ui.log("warn", "progress_undelivered", text.log, true);
    this.o.toast(text.toast);
  }
}
