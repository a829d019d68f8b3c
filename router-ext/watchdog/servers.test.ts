import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { tempDirForTests } from "../../test/helpers/temp-dir.ts";
import {
  authFor,
  collectServers,
  normalizeServerUrl,
  opencodeAuthHeader,
  probeServer,
  rcServersPath,
  readRcServers,
  serversFromRegistry,
} from "./servers.ts";

const tmp = tempDirForTests("stallguard-wd-servers-");

describe("rc-servers.json", () => {
  test("path follows XDG_DATA_HOME, else HOME/.local/share", () => {
    expect(rcServersPath({ XDG_DATA_HOME: "/x/data", HOME: "/h" })).toBe("/x/data/opencode/rc-servers.json");
    expect(rcServersPath({ HOME: "/h" })).toBe("/h/.local/share/opencode/rc-servers.json");
    // A relative XDG_DATA_HOME is invalid per the XDG spec and ignored.
    expect(rcServersPath({ XDG_DATA_HOME: "rel", HOME: "/h" })).toBe(
      "/h/.local/share/opencode/rc-servers.json",
    );
  });

  test("tolerated layouts: array of entries, {servers: [...]}, a map of entries, one entry", () => {
    expect(
      serversFromRegistry([
        { serverUrl: "http://127.0.0.1:4096/", pid: 1 },
        { url: "http://127.0.0.1:4097" },
      ]),
    ).toEqual(["http://127.0.0.1:4096", "http://127.0.0.1:4097"]);
    expect(serversFromRegistry({ servers: [{ server_url: "http://localhost:5000" }] })).toEqual([
      "http://localhost:5000",
    ]);
    expect(serversFromRegistry({ servers: { a: { serverUrl: "http://127.0.0.1:1" } } })).toEqual([
      "http://127.0.0.1:1",
    ]);
    expect(
      serversFromRegistry({
        ses_1: { serverUrl: "http://127.0.0.1:2" },
        ses_2: { serverUrl: "http://127.0.0.1:3" },
      }),
    ).toEqual(["http://127.0.0.1:2", "http://127.0.0.1:3"]);
    expect(serversFromRegistry({ serverUrl: "http://127.0.0.1:9" })).toEqual(["http://127.0.0.1:9"]);
    expect(serversFromRegistry(["http://127.0.0.1:8"])).toEqual(["http://127.0.0.1:8"]);
  });

  test("junk entries are skipped, never thrown on", () => {
    expect(serversFromRegistry(null)).toEqual([]);
    expect(serversFromRegistry(42)).toEqual([]);
    expect(serversFromRegistry([null, 3, { serverUrl: 7 }, { serverUrl: "file:///etc/passwd" }, {}])).toEqual(
      [],
    );
    expect(serversFromRegistry([{ serverUrl: "http://user:pw@127.0.0.1:1" }])).toEqual([]);
  });

  test("missing and malformed files are empty lists; a malformed one is logged", () => {
    const logs: string[] = [];
    expect(readRcServers(join(tmp, "nope.json"), (l) => logs.push(l))).toEqual([]);
    expect(logs).toEqual([]);
    const bad = join(tmp, "bad.json");
    writeFileSync(bad, "{not json");
    expect(readRcServers(bad, (l) => logs.push(l))).toEqual([]);
    expect(logs).toHaveLength(1);
    const good = join(tmp, "good.json");
    writeFileSync(good, JSON.stringify([{ serverUrl: "http://127.0.0.1:4096" }]));
    expect(readRcServers(good)).toEqual(["http://127.0.0.1:4096"]);
  });
});

describe("server list", () => {
  test("normalizes and dedups registry, config and flag URLs in order", () => {
    expect(
      collectServers({
        registry: ["http://127.0.0.1:4096/"],
        config: ["http://127.0.0.1:4096", "https://box:443/oc/"],
        flags: ["http://127.0.0.1:5000", "not a url"],
      }),
    ).toEqual(["http://127.0.0.1:4096", "https://box/oc", "http://127.0.0.1:5000"]);
    expect(normalizeServerUrl("http://127.0.0.1:4096/?x=1")).toBe("http://127.0.0.1:4096");
  });

  test("basic auth only when OPENCODE_SERVER_PASSWORD is set", () => {
    expect(opencodeAuthHeader({})).toBeNull();
    expect(opencodeAuthHeader({ OPENCODE_SERVER_PASSWORD: "pw" })).toBe(
      `Basic ${Buffer.from("opencode:pw").toString("base64")}`,
    );
  });

  test("the password goes to registry, config-file and flag servers only, never to an admin-set URL", () => {
    const basic = opencodeAuthHeader({ OPENCODE_SERVER_PASSWORD: "pw" });
    const auth = authFor(basic, {
      registry: ["http://127.0.0.1:4096/"],
      configFiles: ["https://box:443/oc/"],
      flags: ["http://127.0.0.1:5000"],
    });
    for (const url of ["http://127.0.0.1:4096", "https://box/oc", "http://127.0.0.1:5000"])
      expect(auth(url), url).toBe(basic);
    expect(auth("http://attacker.example:4096")).toBeNull();
    expect(auth("http://127.0.0.1:4097")).toBeNull();
    expect(
      authFor(null, { registry: ["http://127.0.0.1:4096"], configFiles: [], flags: [] })(
        "http://127.0.0.1:4096",
      ),
    ).toBeNull();
  });

  test("probe: a live HTTP server answers, a closed port does not", async () => {
    const srv = createServer((_req, res) => res.writeHead(200).end("{}"));
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const port = (srv.address() as AddressInfo).port;
    const opts = { timeoutMs: 2000, fetchImpl: fetch, auth: null };
    try {
      expect(await probeServer(`http://127.0.0.1:${port}`, opts)).toBe(true);
    } finally {
      await new Promise<void>((r) => srv.close(() => r()));
    }
    expect(await probeServer(`http://127.0.0.1:${port}`, opts)).toBe(false);
  });
});
