// A private session D-Bus with python3-dbusmock's notification daemon on it,
// for tests that run the real notify-send. Needs Debian's dbus (dbus-run-session,
// dbus-send), libnotify-bin and python3-dbusmock (which lives in /usr/bin/python3).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const PYTHON = "/usr/bin/python3";

/** One Notify call as the mock daemon logged it. */
export interface LoggedNotification {
  app: string;
  summary: string;
  body: string;
  /** 0 low, 1 normal, 2 critical; null when the hint was absent. */
  urgency: number | null;
}

export interface SessionBus {
  /** The DBUS_SESSION_BUS_ADDRESS of the private bus. */
  address: string;
  logPath: string;
  /** process.env with the private bus address. */
  env: NodeJS.ProcessEnv;
  notifications(): LoggedNotification[];
  waitFor(pred: (n: LoggedNotification) => boolean, timeoutMs?: number): Promise<LoggedNotification>;
  stop(): Promise<void>;
}

function onPath(cmd: string): boolean {
  try {
    execFileSync("sh", ["-c", 'command -v "$1"', "sh", cmd], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Why the desktop tests cannot run here, or null when they can. */
export function desktopToolsMissing(): string | null {
  for (const cmd of ["notify-send", "dbus-run-session", "dbus-send"])
    if (!onPath(cmd)) return `${cmd} not found`;
  try {
    execFileSync(PYTHON, ["-c", "import dbusmock"], { stdio: "ignore" });
  } catch {
    return `python3-dbusmock not importable by ${PYTHON}`;
  }
  return null;
}

/** Parses the mock's log: entries start with a `<epoch>.<ms> ` stamp; a body may span lines. */
export function parseNotifyLog(text: string): LoggedNotification[] {
  const out: LoggedNotification[] = [];
  for (const entry of text.split(/\n(?=\d+\.\d{3} )/)) {
    const m = /^\d+\.\d{3} Notify "(.*?)" \d+ "(.*?)" "(.*?)" "([\s\S]*)" \[.*?\] (\{.*\}) -?\d+\s*$/.exec(
      entry,
    );
    if (!m) continue;
    const urgency = /"urgency": (\d+)/.exec(m[5] ?? "");
    out.push({
      app: m[1] ?? "",
      summary: m[3] ?? "",
      body: m[4] ?? "",
      urgency: urgency ? Number(urgency[1]) : null,
    });
  }
  return out;
}

/** The first two stdout lines: the bus address and the mock's pid. */
async function header(child: ChildProcess, timeoutMs: number): Promise<[string, number]> {
  let buf = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("dbus-run-session printed no address")), timeoutMs);
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (d: string) => {
      buf += d;
      const lines = buf.split("\n");
      if (lines.length >= 3) {
        clearTimeout(timer);
        resolve([(lines[0] ?? "").trim(), Number(lines[1])]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`dbus-run-session exited early (code ${code})`));
    });
  });
}

function nameOwned(env: NodeJS.ProcessEnv): boolean {
  try {
    const out = execFileSync(
      "dbus-send",
      [
        "--session",
        "--dest=org.freedesktop.DBus",
        "--print-reply",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus.NameHasOwner",
        "string:org.freedesktop.Notifications",
      ],
      { env, encoding: "utf8", timeout: 2000, stdio: ["ignore", "pipe", "ignore"] },
    );
    return /boolean true/.test(out);
  } catch {
    return false;
  }
}

/**
 * Starts `dbus-run-session` running dbusmock's notification_daemon template and
 * waits until it owns org.freedesktop.Notifications.
 *
 * @example
 * const bus = await startSessionBus();
 * try { ...; await bus.waitFor((n) => n.summary === "x"); } finally { await bus.stop(); }
 */
export async function startSessionBus(): Promise<SessionBus> {
  const dir = mkdtempSync(join(tmpdir(), "stallguard-dbus-"));
  const logPath = join(dir, "notify.log");
  const child = spawn(
    "dbus-run-session",
    [
      "--",
      "sh",
      "-c",
      'printf "%s\\n%s\\n" "$DBUS_SESSION_BUS_ADDRESS" "$$"; exec "$0" -m dbusmock --session --template notification_daemon -l "$1"',
      PYTHON,
      logPath,
    ],
    { detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));

  let mockPid = 0;
  // Stopping the mock lets dbus-run-session end its dbus-daemon and reap it;
  // the process group is only killed if that does not happen.
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      try {
        process.kill(mockPid > 0 ? mockPid : -child.pid, "SIGTERM");
      } catch {
        // Already gone.
      }
      const done = await Promise.race([exited.then(() => true), sleep(3000).then(() => false)]);
      if (!done && child.pid) process.kill(-child.pid, "SIGKILL");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const [address, pid] = await header(child, 5000);
    mockPid = pid;
    const env = { ...process.env, DBUS_SESSION_BUS_ADDRESS: address };
    const deadline = Date.now() + 10_000;
    while (!nameOwned(env)) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`notification daemon mock did not start: ${stderr.trim()}`);
      await sleep(100);
    }
    const notifications = () => (existsSync(logPath) ? parseNotifyLog(readFileSync(logPath, "utf8")) : []);
    return {
      address,
      logPath,
      env,
      notifications,
      async waitFor(pred, timeoutMs = 5000) {
        const until = Date.now() + timeoutMs;
        for (;;) {
          const hit = notifications().find(pred);
          if (hit) return hit;
          if (Date.now() > until)
            throw new Error(`no matching notification; log has ${JSON.stringify(notifications())}`);
          await sleep(50);
        }
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
