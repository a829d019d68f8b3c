import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { loadCredentials, tildePath } from "./credentials.ts";
import { readOrCreateSecret, secretFilePaths } from "./secret-files.ts";

const dirs: string[] = [];
const home = () => {
  const d = mkdtempSync(join(tmpdir(), "sg-cred-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const mode = (p: string) => statSync(p).mode & 0o777;

describe("credentials", () => {
  it("creates admin.token, plugin.token and client.key 0600 in a 0700 folder, names paths, never values", () => {
    const h = home();
    const env = { HOME: h };
    const c = loadCredentials(configSchema.parse({}), env);
    const paths = secretFilePaths(env);
    expect(paths.dir).toBe(join(h, ".config", "stallguard"));
    expect(mode(paths.dir)).toBe(0o700);
    for (const f of [paths.admin, paths.plugin, paths.client]) expect(mode(f)).toBe(0o600);
    expect(c.clientKeys).toEqual([{ name: "default", key: expect.any(String) }]);
    const said = c.lines.join("\n");
    expect(said).toContain(paths.admin);
    for (const secret of [c.adminToken, c.pluginToken, c.clientKeys[0]?.key ?? ""]) {
      expect(secret.length).toBeGreaterThanOrEqual(40);
      expect(said).not.toContain(secret);
    }
    expect(c.clientKeyHint).toContain("{file:~/.config/stallguard/client.key}");
    // The second start reads the same values back.
    const again = loadCredentials(configSchema.parse({}), env);
    expect([again.adminToken, again.pluginToken, again.clientKeys[0]?.key]).toEqual([
      c.adminToken,
      c.pluginToken,
      c.clientKeys[0]?.key,
    ]);
  });

  it("the environment wins and writes no file; named keys come from their variables", () => {
    const h = home();
    const cfg = configSchema.parse({
      server: {
        client_keys: [
          { name: "alice", key_env: "ALICE_KEY" },
          { name: "bob", key_env: "BOB_KEY" },
        ],
      },
    });
    const env = {
      HOME: h,
      STALLGUARD_ADMIN_TOKEN: "admin-from-env",
      STALLGUARD_TOKEN: "plugin-from-env",
      ALICE_KEY: "alice-secret",
      BOB_KEY: "bob-secret",
    };
    const c = loadCredentials(cfg, env);
    expect(c).toMatchObject({ adminToken: "admin-from-env", pluginToken: "plugin-from-env" });
    expect(c.clientKeys).toEqual([
      { name: "alice", key: "alice-secret" },
      { name: "bob", key: "bob-secret" },
    ]);
    expect(() => statSync(secretFilePaths(env).client)).toThrow();
    expect(() => loadCredentials(cfg, { ...env, BOB_KEY: "" })).toThrow(/bob needs \$BOB_KEY/);
  });

  it("tightens a token file left readable by others, and names unique client keys only", () => {
    const h = home();
    const paths = secretFilePaths({ HOME: h });
    readOrCreateSecret(paths.plugin);
    writeFileSync(paths.plugin, "kept-value", { mode: 0o644 });
    chmodSync(paths.plugin, 0o644);
    expect(readOrCreateSecret(paths.plugin)).toEqual({ value: "kept-value", created: false });
    expect(mode(paths.plugin)).toBe(0o600);
    const dup = configSchema.safeParse({
      server: {
        client_keys: [
          { name: "a", key_env: "A" },
          { name: "a", key_env: "B" },
        ],
      },
    });
    expect(dup.success).toBe(false);
    expect(tildePath(join(h, ".config", "x"), { HOME: h })).toBe("~/.config/x");
  });
});
