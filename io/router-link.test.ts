import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { tempDirForTests } from "../test/helpers/temp-dir.ts";
import {
  announceRouter,
  DEFAULT_ROUTER_URL,
  reachableUrl,
  readRouterLink,
  resolveRouterUrl,
  routerLinkPath,
  writeRouterLink,
} from "./router-link.ts";

const dir = tempDirForTests("sg-link-");
const link = {
  url: "http://127.0.0.1:4871",
  token: { file: "/x/plugin.token" },
  version: "0.1.0",
  pid: 7,
  started_at: 1,
};

describe("the router URL rule", () => {
  test("STALLGUARD_URL, then plugin.router_url, then serve's router.json, then the default", () => {
    expect(resolveRouterUrl({ envUrl: "http://a:1/", configured: "http://b:2", link })).toEqual({
      url: "http://a:1",
      source: "env",
    });
    expect(resolveRouterUrl({ envUrl: "ftp://bad", configured: "http://b:2", link })).toEqual({
      url: "http://b:2",
      source: "config",
    });
    expect(resolveRouterUrl({ configured: null, link })).toEqual({
      url: "http://127.0.0.1:4871",
      source: "link",
    });
    expect(resolveRouterUrl({})).toEqual({ url: DEFAULT_ROUTER_URL, source: "default" });
  });

  test("a wildcard bind is announced on loopback", () => {
    expect(reachableUrl("0.0.0.0", 4871)).toBe("http://127.0.0.1:4871");
    expect(reachableUrl("::", 4871)).toBe("http://[::1]:4871");
    expect(reachableUrl("192.168.1.5", 80)).toBe("http://192.168.1.5:80");
  });
});

describe("announceRouter (serve's side)", () => {
  test("writes router.json atomically, 0600 in a 0700 folder, saying where the token is, never its value", () => {
    const env = { HOME: dir, XDG_CONFIG_HOME: join(dir, "cfg") };
    const lines: string[] = [];
    const base = {
      env,
      host: "0.0.0.0",
      port: 4999,
      tokenEnv: "STALLGUARD_TOKEN",
      version: "0.1.0",
      startedAt: 5,
    };
    announceRouter({ ...base, log: (l) => lines.push(l) });
    const path = routerLinkPath(env);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "cfg", "stallguard")).mode & 0o777).toBe(0o700);
    expect(readRouterLink(path)).toEqual({
      url: "http://127.0.0.1:4999",
      token: { file: join(dir, "cfg", "stallguard", "plugin.token") },
      version: "0.1.0",
      pid: process.pid,
      started_at: 5,
    });
    expect(readdirSync(join(dir, "cfg", "stallguard"))).toEqual(["router.json"]);
    // The token from a variable: the file names the variable, not the value.
    announceRouter({
      ...base,
      env: { ...env, STALLGUARD_TOKEN: "secret-value-123" },
      log: (l) => lines.push(l),
    });
    expect(readFileSync(path, "utf8")).not.toContain("secret-value-123");
    expect(readRouterLink(path)?.token).toEqual({ env: "STALLGUARD_TOKEN" });
    expect(lines[1]).toBe(
      `plugin link: ${path} says http://127.0.0.1:4999, token in $STALLGUARD_TOKEN (plugins without STALLGUARD_URL report here)`,
    );
  });

  test("a folder it cannot write is logged, not fatal; a bad or oversized file reads as none", () => {
    const blocked = join(dir, "blocked");
    writeFileSync(blocked, "a file where the config folder should be");
    const lines: string[] = [];
    const env = { HOME: dir, XDG_CONFIG_HOME: blocked };
    announceRouter({
      env,
      host: "127.0.0.1",
      port: 1,
      tokenEnv: "T",
      version: "v",
      startedAt: 0,
      log: (l) => lines.push(l),
    });
    expect(lines[0]).toMatch(
      /^plugin link: cannot write .*router\.json: .*; plugins need STALLGUARD_URL=http:\/\/127\.0\.0\.1:1/,
    );
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ ...link, extra: 1 }));
    expect(readRouterLink(bad)).toBeNull();
    writeFileSync(bad, JSON.stringify({ ...link, version: "x".repeat(5000) }));
    expect(readRouterLink(bad)).toBeNull();
    expect(readRouterLink(join(dir, "missing.json"))).toBeNull();
  });

  test("links are not followed: read, a linked router.json is none; written, the link is replaced and its target kept", () => {
    const folder = join(dir, "links");
    mkdirSync(folder, { mode: 0o700 });
    const target = join(dir, "target.json");
    writeFileSync(target, JSON.stringify(link), { mode: 0o644 });
    const path = join(folder, "router.json");
    symlinkSync(target, path);
    expect(readRouterLink(target)).toEqual(link);
    expect(readRouterLink(path)).toBeNull();
    writeRouterLink(path, { ...link, url: "http://127.0.0.1:4999" });
    expect(lstatSync(path).isSymbolicLink()).toBe(false);
    expect(readRouterLink(path)?.url).toBe("http://127.0.0.1:4999");
    expect(readFileSync(target, "utf8")).toBe(JSON.stringify(link));
    expect(statSync(target).mode & 0o777).toBe(0o644);
    // An old router.json others could read is replaced by a 0600 one; no temporary file stays.
    chmodSync(path, 0o644);
    writeRouterLink(path, link);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(folder)).toEqual(["router.json"]);
    // A folder where the file should be reads as none.
    expect(readRouterLink(folder)).toBeNull();
  });

  test("an empty token variable counts as unset (serve's rule): router.json names the file", () => {
    const env = { HOME: dir, XDG_CONFIG_HOME: join(dir, "cfg-empty"), STALLGUARD_TOKEN: "" };
    announceRouter({
      env,
      host: "127.0.0.1",
      port: 4998,
      tokenEnv: "STALLGUARD_TOKEN",
      version: "v",
      startedAt: 0,
      log: () => {},
    });
    expect(readRouterLink(routerLinkPath(env))?.token).toEqual({
      file: join(dir, "cfg-empty", "stallguard", "plugin.token"),
    });
  });
});
