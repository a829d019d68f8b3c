// The systemd user units as install-units writes them, checked by the real
// systemd-analyze verify (skipped, with the reason printed, when it is absent).
// The team deployment's files (deploy/team: the replica template unit and the
// HAProxy example) are checked the same way, and with haproxy -c.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, test } from "vitest";
import { installUnits, UNIT_FILES } from "../../router-ext/cli/install-units.ts";
import { timerInstalled } from "../../router-ext/watchdog/index.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), "stallguard units "));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const hasAnalyze = spawnSync("systemd-analyze", ["--version"]).status === 0;
if (!hasAnalyze) console.log("[skip] systemd-analyze is not installed: unit verification skipped");

/** systemd-analyze --user (or --system) verify; a private runtime dir, since a test has no user manager. */
function verify(files: string[], scope = "--user"): { status: number | null; out: string } {
  const runtime = mkdtempSync(join(tmpdir(), "stallguard-rt-"));
  try {
    const r = spawnSync("systemd-analyze", [scope, "verify", ...files], {
      encoding: "utf8",
      env: { ...process.env, XDG_RUNTIME_DIR: runtime, SYSTEMD_LOG_COLOR: "0" },
      timeout: 60_000,
    });
    return { status: r.status, out: `${r.stdout}${r.stderr}`.trim() };
  } finally {
    rmSync(runtime, { recursive: true, force: true });
  }
}

describe("systemd user units", () => {
  // A directory and a binary path with a space and a percent sign, to prove the escaping.
  const dir = join(tmp, "user units");
  const binDir = join(tmp, "pkg 100%");
  const bin = join(binDir, "dist", "stallguard.mjs");
  const { files } = installUnits({ binPath: bin, dir, intervalMs: 120_000, workDir: REPO });

  test("writes the three units with node, bin, interval, bus address and sandboxing", () => {
    expect(files.map((f) => f.slice(dir.length + 1)).sort()).toEqual([...UNIT_FILES].sort());
    const serve = readFileSync(join(dir, "stallguard.service"), "utf8");
    const tickSvc = readFileSync(join(dir, "stallguard-watchdog.service"), "utf8");
    const timer = readFileSync(join(dir, "stallguard-watchdog.timer"), "utf8");
    const escapedBin = `"${bin.replace(/%/g, "%%")}"`;
    expect(serve).toContain(`ExecStart="${process.execPath}" ${escapedBin} serve`);
    expect(tickSvc).toContain(`ExecStart="${process.execPath}" ${escapedBin} watchdog --once`);
    expect(tickSvc).toContain("Type=oneshot");
    // serve writes router.json beside the token files (the watchdog only reads them).
    expect(serve).toContain("ReadWritePaths=-%E/stallguard");
    expect(timer).toContain("OnUnitActiveSec=120s");
    expect(timer).toContain("Unit=stallguard-watchdog.service");
    for (const unit of [serve, tickSvc]) {
      for (const line of [
        "Environment=DBUS_SESSION_BUS_ADDRESS=unix:path=%t/bus",
        "ReadWritePaths=-%t/bus",
        "ReadWritePaths=-%h/.local/share/opencode",
        "ProtectHome=read-only",
        "ProtectSystem=strict",
        "EnvironmentFile=-%E/stallguard/env",
        "StateDirectory=stallguard",
      ])
        expect(unit).toContain(line);
      expect(unit).not.toMatch(/@[A-Z]+@/);
    }
  });

  test("timerInstalled sees the installed timer file", () => {
    expect(timerInstalled({ dir, systemctl: false })).toBe(true);
    expect(timerInstalled({ dir: join(tmp, "empty"), systemctl: false })).toBe(false);
  });

  test.skipIf(!hasAnalyze)("systemd-analyze --user verify accepts them with no complaint", () => {
    const r = verify(files);
    if (r.out) console.log(r.out);
    expect(r.status).toBe(0);
    expect(r.out).toBe("");
  });

  test.skipIf(!hasAnalyze)("the same check catches a broken unit (so the pass above means something)", () => {
    const broken = join(tmp, "broken.service");
    writeFileSync(
      broken,
      readFileSync(join(dir, "stallguard-watchdog.service"), "utf8").replace(
        /^ExecStart=.*$/m,
        "ExecStart=relative/path watchdog",
      ),
    );
    const r = verify([broken]);
    expect(r.out).toContain("relative/path");
    expect(r.status).not.toBe(0);
  });

  test("the CLI: `stallguard install-units --dir D --config F` writes the units with F's watchdog.interval", () => {
    const cliDir = join(tmp, "cli units");
    const cfg = join(tmp, "units.yaml");
    writeFileSync(cfg, "watchdog:\n  interval: 7m\n");
    const r = spawnSync(
      "node",
      [join(REPO, "dist", "stallguard.mjs"), "install-units", "--dir", cliDir, "--config", cfg],
      {
        cwd: REPO,
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("wrote 3 units");
    expect(readFileSync(join(cliDir, "stallguard-watchdog.timer"), "utf8")).toContain("OnUnitActiveSec=420s");
    expect(readFileSync(join(cliDir, "stallguard.service"), "utf8")).toContain(
      join(REPO, "dist", "stallguard.mjs"),
    );
    const bad = spawnSync(
      "node",
      [
        join(REPO, "dist", "stallguard.mjs"),
        "install-units",
        "--dir",
        cliDir,
        "--config",
        join(tmp, "nope.yaml"),
      ],
      { cwd: REPO, encoding: "utf8" },
    );
    expect(bad.status).toBe(1);
  });
});

const hasHaproxy = spawnSync("haproxy", ["-v"]).status === 0;
if (!hasHaproxy) console.log("[skip] haproxy is not installed: deploy/team/haproxy.cfg not checked");

describe("team deployment files (deploy/team)", () => {
  const unit = readFileSync(join(REPO, "deploy", "team", "stallguard@.service"), "utf8");
  const exec = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? "";

  test.skipIf(!hasAnalyze)(
    "systemd-analyze --system verify accepts an instance of the replica template",
    () => {
      const instance = join(tmp, "stallguard@4871.service");
      writeFileSync(instance, unit);
      const r = verify([instance], "--system");
      if (r.out) console.log(r.out);
      expect(r.status).toBe(0);
      expect(r.out).toBe("");
    },
  );

  test("the replica runs serve on PostgreSQL with flags serve takes, the password from a file", () => {
    expect(exec).toMatch(/ serve --port %i /);
    expect(exec).toMatch(/--db postgres:\/\/[^:@/]+@[^ ]+\/\w+$/);
    expect(unit).toContain("Environment=STALLGUARD_PG_PASSWORD_FILE=/etc/stallguard/pg.password");
    expect(unit).not.toMatch(/STALLGUARD_PG_PASSWORD=/);
    const help = spawnSync("node", [join(REPO, "dist", "stallguard.mjs"), "serve", "--help"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    const flags = [...exec.matchAll(/ (--[a-z-]+)/g)].map((m) => m[1] as string);
    expect(flags).toEqual(["--port", "--host", "--config", "--db"]);
    for (const f of flags) expect(`${help.stdout}${help.stderr}`).toContain(f);
  });

  test.skipIf(!hasHaproxy)("haproxy -c accepts the example, which checks GET /health", () => {
    const cfg = join(REPO, "deploy", "team", "haproxy.cfg");
    expect(readFileSync(cfg, "utf8")).toContain("option httpchk GET /health");
    const r = spawnSync("haproxy", ["-c", "-f", cfg], { encoding: "utf8", timeout: 30_000 });
    expect(`${r.stdout}${r.stderr}`).toContain("Configuration file is valid");
    expect(r.status).toBe(0);
  });
});
