// A real HAProxy from Debian in front of test servers: a generated config on
// a free loopback port, round robin, an HTTP health check on GET /health every
// 300 ms, and a connection that fails retried on the other server (redispatch),
// as a team's load balancer would be set up. Runs in the foreground (-db) as a
// child of the test; stop() kills it by its pid and removes its folder.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.ts";

function findHaproxy(): string | null {
  const r = spawnSync("sh", ["-c", "command -v haproxy"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
}

export const haproxyBin = findHaproxy();

const reason = "skipped: haproxy not found (apt-get install haproxy)";
if (!haproxyBin) console.warn(`stallguard tests: ${reason}`);

export const haproxyTitle = (name: string): string => (haproxyBin ? name : `${name} [${reason}]`);

export interface Haproxy {
  url: string;
  port: number;
  /** Everything HAProxy printed (its alerts and warnings). */
  output(): string;
  stop(): Promise<void>;
}

export function haproxyConfig(port: number, backends: ReadonlyArray<{ name: string; port: number }>): string {
  return `global
  maxconn 4096

defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 30s
  # A /health that answers slowly under load is not a dead server.
  timeout check 3s
  retries 3
  option redispatch 1

frontend front
  bind 127.0.0.1:${port}
  default_backend replicas

backend replicas
  balance roundrobin
  option httpchk GET /health
  default-server inter 300ms fall 3 rise 1
${backends.map((b) => `  server ${b.name} 127.0.0.1:${b.port} check`).join("\n")}
`;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/** Starts HAProxy in front of the given loopback ports; resolves once it accepts connections. */
export async function startHaproxy(
  backends: ReadonlyArray<{ name: string; port: number }>,
): Promise<Haproxy> {
  if (!haproxyBin) throw new Error(reason);
  const dir = mkdtempSync(join(tmpdir(), "stallguard-haproxy-"));
  const port = await freePort();
  const cfg = join(dir, "haproxy.cfg");
  writeFileSync(cfg, haproxyConfig(port, backends));
  let out = "";
  const child: ChildProcess = spawn(haproxyBin, ["-db", "-f", cfg], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.on("data", (b) => {
    out += String(b);
  });
  child.stderr?.on("data", (b) => {
    out += String(b);
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([gone, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const end = Date.now() + 10_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > end) {
      await stop();
      throw new Error(`haproxy did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `http://127.0.0.1:${port}`, port, output: () => out, stop };
}
