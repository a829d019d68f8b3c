// The watchdog's one direct alert: when the router is down, a critical desktop
// notification straight through notify-send (spawned, no shell), since the
// router's notifier is exactly what is not running.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

/** The session bus address, falling back to `$XDG_RUNTIME_DIR/bus` (where systemd user sessions put it). */
export function sessionBusEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.DBUS_SESSION_BUS_ADDRESS) return env;
  const runtime =
    env.XDG_RUNTIME_DIR ?? (typeof process.getuid === "function" ? `/run/user/${process.getuid()}` : "");
  const bus = runtime ? join(runtime, "bus") : "";
  return bus && existsSync(bus) ? { ...env, DBUS_SESSION_BUS_ADDRESS: `unix:path=${bus}` } : env;
}

export interface DesktopResult {
  ok: boolean;
  detail: string;
}

/** notify-send -u critical -a stallguard SUMMARY BODY; resolves (never rejects) within timeoutMs. */
export function notifyCritical(
  summary: string,
  body: string,
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number; command?: string } = {},
): Promise<DesktopResult> {
  const env = sessionBusEnv(opts.env ?? process.env);
  if (!env.DBUS_SESSION_BUS_ADDRESS)
    return Promise.resolve({
      ok: false,
      detail: "DBUS_SESSION_BUS_ADDRESS is not set and no session bus socket",
    });
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: DesktopResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const child = spawn(
      opts.command ?? "notify-send",
      ["-u", "critical", "-a", "stallguard", "--", summary, body],
      { env, stdio: ["ignore", "ignore", "pipe"], shell: false },
    );
    let err = "";
    child.stderr?.on("data", (c: Buffer) => {
      if (err.length < 500) err += c.toString("utf8");
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish({ ok: false, detail: "notify-send timed out" });
    }, opts.timeoutMs ?? 5000);
    child.on("error", (e) => finish({ ok: false, detail: `notify-send failed: ${e.message}` }));
    child.on("close", (code) =>
      finish(
        code === 0
          ? { ok: true, detail: "sent" }
          : { ok: false, detail: `notify-send exit ${code}: ${err.trim()}` },
      ),
    );
  });
}
