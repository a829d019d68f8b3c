// Desktop notifications through notify-send on the session D-Bus. The command
// runs without a shell, with the notifier's environment (which carries
// DBUS_SESSION_BUS_ADDRESS).
import { spawn } from "node:child_process";
import type { ChannelConfig } from "../../../shared/index.ts";
import { checkCommand, checkSessionBus } from "../diagnostics.ts";
import type { Alert, ChannelAdapter } from "../types.ts";
import { DeliveryError, type Env } from "./secret-env.ts";
import { markupText, plainText } from "./text.ts";

export type DesktopConfig = Extract<ChannelConfig, { type: "desktop" }>;

const STDERR_MAX = 300;

/** notify-send arguments for one alert: critical alerts persist on screen. */
export function notifySendArgs(c: DesktopConfig, a: Alert): string[] {
  const urgency = a.state !== "resolve" && a.severity === "critical" ? "critical" : "normal";
  // The summary is body markup to the notification server; the title is plain text.
  return ["-a", c.app_name, "-u", urgency, "--", plainText(a.title), markupText(a.summary)];
}

export function desktopChannel(c: DesktopConfig, env: Env): ChannelAdapter {
  return {
    deliver(alert, signal) {
      return new Promise<void>((resolve, reject) => {
        const child = spawn(c.command, notifySendArgs(c, alert), {
          env: { ...env },
          stdio: ["ignore", "ignore", "pipe"],
          shell: false,
          signal,
          killSignal: "SIGKILL",
        });
        let stderr = "";
        child.stderr?.setEncoding("utf8");
        child.stderr?.on("data", (d: string) => {
          if (stderr.length < STDERR_MAX) stderr += d;
        });
        child.once("error", (err: NodeJS.ErrnoException) => {
          if (err.code === "ENOENT")
            reject(
              new DeliveryError(
                `${c.command} not found${c.command === "notify-send" ? " (install libnotify-bin)" : ""}`,
              ),
            );
          else if (signal.aborted) reject(new DeliveryError(`${c.command} aborted`));
          else reject(new DeliveryError(`${c.command} failed to start: ${err.code ?? err.message}`));
        });
        child.once("close", (code, sig) => {
          if (code === 0) return resolve();
          const why = stderr.replace(/\s+/g, " ").trim().slice(0, STDERR_MAX);
          reject(
            new DeliveryError(
              `${c.command} exited with ${sig ? `signal ${sig}` : `code ${code}`}${why ? `: ${why}` : ""}`,
            ),
          );
        });
      });
    },
    target() {
      return `${c.command} (app ${c.app_name})`;
    },
    async diagnose() {
      const problems: string[] = [];
      const missing = checkCommand(c.command, env);
      if (missing) problems.push(missing);
      problems.push(...(await checkSessionBus(env)));
      return problems;
    },
  };
}
