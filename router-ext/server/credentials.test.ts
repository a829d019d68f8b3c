import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readOrCreateSecret, readSecretFile, secretFilePaths } from "../../io/secret-files.ts";
import { configSchema } from "../../shared/index.ts";
import { loadCredentials, tildePath } from "./credentials.ts";

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

  it("repairs a token file others could read and warns with its real mode; logs the real mode of each file", () => {
    const h = home();
    const env = { HOME: h };
    const paths = secretFilePaths(env);
    loadCredentials(configSchema.parse({}), env);
    writeFileSync(paths.plugin, "kept-value-kept-value-kept-value-1");
    chmodSync(paths.plugin, 0o644);
    chmodSync(paths.admin, 0o400);
    const c = loadCredentials(configSchema.parse({}), env);
    expect(c.pluginToken).toBe("kept-value-kept-value-kept-value-1");
    expect(mode(paths.plugin)).toBe(0o600);
    const said = c.lines.join("\n");
    expect(said).toContain(`plugin token: read from ${paths.plugin} (mode 0600); WARNING: it was mode 0644`);
    expect(said).toContain(`admin token: read from ${paths.admin} (mode 0400)`);
    expect(said).toContain(`gate client key (default): read from ${paths.client} (mode 0600)`);
    expect(said.match(/WARNING/g)).toHaveLength(1);
  });

  it("refuses a token file that is a symbolic link: the target is neither read nor tightened", () => {
    const h = home();
    const env = { HOME: h };
    const paths = secretFilePaths(env);
    const outside = join(h, "elsewhere.txt");
    writeFileSync(outside, "a-value-someone-else-owns-0123456789", { mode: 0o644 });
    chmodSync(outside, 0o644);
    mkdirSync(paths.dir, { recursive: true });
    symlinkSync(outside, paths.plugin);
    expect(() => loadCredentials(configSchema.parse({}), env)).toThrow(
      `${paths.plugin} is a symbolic link, and stallguard does not follow links to its secrets`,
    );
    expect(mode(outside)).toBe(0o644);
    expect(readSecretFile(paths.plugin)).toBeNull();
    // A dangling link is refused the same way, not reported as a missing file.
    rmSync(outside);
    expect(() => readOrCreateSecret(paths.plugin)).toThrow(/is a symbolic link/);
  });

  it("an empty token file, or one without a valid token, stops start-up naming the file and the fix", () => {
    const h = home();
    const env = { HOME: h };
    const paths = secretFilePaths(env);
    mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
    writeFileSync(paths.admin, "\n", { mode: 0o600 });
    expect(() => loadCredentials(configSchema.parse({}), env)).toThrow(
      `${paths.admin} is empty: delete it and start again (a new one is written), or write the token into it`,
    );
    writeFileSync(paths.admin, "two words\n");
    expect(() => loadCredentials(configSchema.parse({}), env)).toThrow(
      `${paths.admin} does not hold a valid token`,
    );
  });

  it("a variable that is set but invalid stops start-up naming it; no file is used instead", () => {
    const h = home();
    const cfg = configSchema.parse({});
    for (const name of ["STALLGUARD_ADMIN_TOKEN", "STALLGUARD_TOKEN", "STALLGUARD_CLIENT_KEY"]) {
      const env = { HOME: h, [name]: "has a space" };
      expect(() => loadCredentials(cfg, env), name).toThrow(
        `$${name} is set but is not a valid secret (printable ASCII without spaces`,
      );
    }
    // Empty means unset (a systemd EnvironmentFile line left blank): the file is used.
    expect(loadCredentials(cfg, { HOME: h, STALLGUARD_ADMIN_TOKEN: "" }).lines[0]).toContain("admin.token");
    const named = configSchema.parse({ server: { client_keys: [{ name: "alice", key_env: "ALICE_KEY" }] } });
    expect(() => loadCredentials(named, { HOME: h, ALICE_KEY: "caf\u00e9" })).toThrow(
      "alice: $ALICE_KEY is set but is not a valid key",
    );
  });

  it("beyond loopback every credential must be 32+ characters with 10+ different ones", () => {
    const h = home();
    const strong = "Xq3vT9pL2mK8wR4sZ7yB1nC6dF5gH0jA";
    const cfg = (extra: object = {}) => configSchema.parse({ server: { host: "0.0.0.0", ...extra } });
    const env = (admin: string) => ({ HOME: h, STALLGUARD_ADMIN_TOKEN: admin, STALLGUARD_TOKEN: strong });
    expect(() => loadCredentials(cfg(), env("x"))).toThrow(
      "refusing to bind 0.0.0.0: $STALLGUARD_ADMIN_TOKEN is 1 character(s); beyond loopback a token needs at least 32",
    );
    expect(() => loadCredentials(cfg(), env("ab".repeat(20)))).toThrow(
      "$STALLGUARD_ADMIN_TOKEN has only 2 different character(s)",
    );
    // The client key file serve writes is strong; one written by hand is checked too.
    expect(loadCredentials(cfg(), env(strong)).adminToken).toBe(strong);
    writeFileSync(secretFilePaths({ HOME: h }).client, "short-key");
    expect(() => loadCredentials(cfg(), env(strong))).toThrow(
      `refusing to bind 0.0.0.0: ${secretFilePaths({ HOME: h }).client} is 9 character(s)`,
    );
    const named = cfg({ client_keys: [{ name: "bob", key_env: "BOB_KEY" }] });
    expect(() => loadCredentials(named, { ...env(strong), BOB_KEY: "bob" })).toThrow(
      "$BOB_KEY (client key bob) is 3 character(s)",
    );
    // On loopback a short token is the operator's business.
    expect(loadCredentials(configSchema.parse({}), env("x")).adminToken).toBe("x");
  });

  it("names unique client keys only, and writes paths under HOME with ~", () => {
    const h = home();
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
