// The CLI verbs called as functions with argv (router-ext/cli/run.ts): exit
// codes, what they print, and serve's start and stop on a signal, with real
// files, a real server on loopback and no process exit.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { defaultBinPath } from "../../router-ext/cli/install-units.ts";
import { run } from "../../router-ext/cli/run.ts";
import { testIo as cliIo } from "../helpers/cli-io.ts";

const RECORDED = join(import.meta.dirname, "..", "fixtures", "recorded");
const tmp = mkdtempSync(join(tmpdir(), "stallguard-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const testIo = (env: NodeJS.ProcessEnv = {}) => cliIo(tmp, env);

const quietConfig = join(tmp, "quiet.yaml");
writeFileSync(quietConfig, "watchdog:\n  enabled: false\nnotifications:\n  channels: []\n");

describe("stallguard", () => {
  test("--version, --help and an unknown verb", async () => {
    const v = testIo();
    expect(await run(["--version"], v.io)).toBe(0);
    expect(v.out().trim()).toMatch(/^\S+$/);
    const h = testIo();
    expect(await run(["calibrate", "--help"], h.io)).toBe(0);
    expect(h.out()).toContain("--sweep");
    const u = testIo();
    expect(await run(["nope"], u.io)).toBe(2);
    expect(u.err()).toContain("unknown command nope");
  });

  test("serve: a bad flag is exit 1; otherwise it serves until the signal, then closes with 0", async () => {
    const bad = testIo();
    expect(await run(["serve", "--port", "x"], bad.io)).toBe(1);
    expect(bad.err()).toContain("--port: not a port number: x");

    const t = testIo({ STALLGUARD_ADMIN_TOKEN: "cli-admin-token-0123456789" });
    const db = join(tmp, "serve.db");
    const done = run(["serve", "--port", "0", "--db", db, "--config", quietConfig], t.io);
    await expect.poll(() => /listening on (http:\S+)/.exec(t.out())?.[1]).toBeTruthy();
    const url = /listening on (http:\S+)/.exec(t.out())?.[1] as string;
    expect((await fetch(`${url}/health`)).status).toBe(200);
    // What a plugin needs to find it: router.json beside plugin.token, 0600, no secret in it.
    const link = join(tmp, ".config", "stallguard", "router.json");
    await expect.poll(() => existsSync(link)).toBe(true);
    expect(statSync(link).mode & 0o777).toBe(0o600);
    const doc = JSON.parse(readFileSync(link, "utf8"));
    expect(doc).toMatchObject({ url, token: { file: join(tmp, ".config", "stallguard", "plugin.token") } });
    expect(readFileSync(link, "utf8")).not.toContain(readFileSync(doc.token.file, "utf8").trim());
    expect(t.out()).toContain(`admin page: ${url}/admin (it asks for the admin token`);
    expect(t.out()).toContain(`plugin link: ${link} says ${url}, token in ${doc.token.file}`);
    expect(t.out()).toContain(
      "gate: no upstream configured (--upstream or server.upstream); /v1/* answers 503",
    );
    t.stop("SIGTERM");
    expect(await done).toBe(0);
    expect(t.err()).toContain("SIGTERM, shutting down");
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });

  test("calibrate --json prints the replay of exported sessions", async () => {
    const t = testIo();
    expect(await run(["calibrate", "--export", RECORDED, "--json", "--quiet"], t.io), t.err()).toBe(0);
    const doc = JSON.parse(t.out()) as { sessions: Array<{ id: string }> };
    expect(doc.sessions.length).toBeGreaterThan(0);
    const bad = testIo();
    expect(await run(["calibrate", "--export", join(tmp, "missing")], bad.io)).not.toBe(0);
  });

  test("watchdog --once with no opencode and no router: one quiet tick, exit 0", async () => {
    const t = testIo();
    const code = await run(
      ["watchdog", "--once", "--router", "http://127.0.0.1:1", "--config", quietConfig],
      t.io,
    );
    expect(code).toBe(0);
    expect(t.out()).toMatch(
      /^watchdog: servers=0 sessions=0 flagged=0 transitions=0 router=down db=missing$/m,
    );
    expect(existsSync(join(tmp, "state", "stallguard", "watchdog.json"))).toBe(true);
    const bad = testIo();
    expect(await run(["watchdog", "--once", "--config", join(tmp, "missing.yaml")], bad.io)).toBe(2);
  });

  test("install-plugin copies a bundle into a project and names its version", async () => {
    const bundle = join(tmp, "bundle.js");
    writeFileSync(bundle, "// stallguard-plugin 9.9.9\nexport const StallguardPlugin = async () => ({});\n");
    const t = testIo();
    expect(await run(["install-plugin", "--from", bundle, "--project", join(tmp, "proj")], t.io)).toBe(0);
    expect(t.out()).toContain("installed stallguard plugin 9.9.9");
    const target = join(tmp, "proj", ".opencode", "plugins", "stallguard.js");
    expect(readFileSync(target, "utf8")).toContain("StallguardPlugin");
    const none = testIo();
    expect(await run(["install-plugin", "--from", join(tmp, "none.js")], none.io)).toBe(1);
    expect(none.err()).toContain("no plugin bundle");
  });

  test("install-units writes the three units, or says the CLI is not built", async () => {
    const t = testIo();
    const dir = join(tmp, "units");
    const code = await run(["install-units", "--dir", dir, "--config", quietConfig], t.io);
    if (existsSync(defaultBinPath())) {
      expect(code, t.err()).toBe(0);
      expect(t.out()).toContain(`wrote 3 units to ${dir}`);
      expect(readFileSync(join(dir, "stallguard-watchdog.timer"), "utf8")).toContain("OnUnitActiveSec");
    } else {
      expect(code).toBe(1);
      expect(t.err()).toContain("run npm run build first");
    }
  });
});
