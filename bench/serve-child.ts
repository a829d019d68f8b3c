// `stallguard serve` as a child process for the benches: a fresh SQLite file
// and config under `dir` (watchdog and notifications off), its own HOME, and
// the URL it prints once it listens. Uses dist/stallguard.mjs when present,
// else the TypeScript sources via tsx.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

export async function startServe(
  dir: string,
  opts: { args?: string[]; env?: Record<string, string>; db?: string; nodeArgs?: string[] } = {},
): Promise<{ proc: ChildProcess; url: string }> {
  const bundle = join(ROOT, "dist/stallguard.mjs");
  const entry = existsSync(bundle) ? [bundle] : ["--import", "tsx", join(ROOT, "router-ext/cli/main.ts")];
  const config = join(dir, "bench.yaml");
  writeFileSync(config, "watchdog:\n  enabled: false\nnotifications:\n  channels: []\n");
  const args = [
    "serve",
    "--port",
    "0",
    "--db",
    opts.db ?? join(dir, "bench.db"),
    "--config",
    config,
    ...(opts.args ?? []),
  ];
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...entry, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: dir, XDG_CONFIG_HOME: join(dir, "config"), ...opts.env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    proc.once("exit", (code) => reject(new Error(`serve exited (${code}): ${out}`)));
  });
  return { proc, url };
}
