// What the plugin shows and logs through opencode's own client: a toast in the
// TUI and a line in opencode's log, each a call that may be missing or fail
// and is never awaited. Logs are rate-limited per code (a failing router would
// otherwise log on every call).
import { BoundedMap } from "../shared/bounded-map.ts";
import type { Toast } from "./toast.ts";

/** The parts of opencode's client the plugin uses; every call is optional and may fail. */
export interface ClientLike {
  session?: { get?: (o: { path: { id: string } }) => Promise<unknown> };
  tui?: { showToast?: (o: { body: Toast }) => Promise<unknown> };
  app?: {
    log?: (o: {
      body: { service: string; level: "info" | "warn" | "error"; message: string };
    }) => Promise<unknown>;
  };
}

const LOG_EVERY_MS = 60_000;

export class OpencodeUi {
  private readonly lastLog = new BoundedMap<string, number>(64);

  constructor(
    private readonly client: ClientLike | undefined,
    private readonly now: () => number,
  ) {}

  /** Shows a toast; false when there is no toast call. A failure is logged, never thrown. */
  toast(toast: Toast): boolean {
    const show = this.client?.tui?.showToast;
    if (!show) return false;
    try {
      show.call(this.client?.tui, { body: toast }).catch((err: unknown) => {
        this.log("warn", "toast_failed", String(err));
      });
    } catch (err) {
      this.log("warn", "toast_failed", String(err));
    }
    return true;
  }

  /**
   * Logs through opencode's log endpoint, at most once a minute per code
   * (`always`: a line that is already rare by its own rule, such as the
   * delivery warning, is never held back).
   */
  log(level: "info" | "warn" | "error", code: string, message: string, always = false): void {
    const now = this.now();
    const last = this.lastLog.get(code);
    if (!always && last !== undefined && now - last < LOG_EVERY_MS) return;
    this.lastLog.set(code, now);
    const log = this.client?.app?.log;
    if (!log) return;
    try {
      log
        .call(this.client?.app, {
          body: { service: "stallguard", level, message: `${code}: ${message}`.slice(0, 500) },
        })
        .catch(() => undefined);
    } catch {
      // the log endpoint itself failed: there is nowhere left to report it
    }
  }
}
