// The PostgreSQL gather's bounds and password reading, on real sockets and
// files (the full path against a real server is test/e2e/doctor-postgres.test.ts).
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatherPgStore } from "./pg-gather.ts";

describe("gatherPgStore", () => {
  let silent: Server;
  let port: number;
  const sockets: Socket[] = [];
  const dir = mkdtempSync(join(tmpdir(), "sg-pg-gather-"));

  beforeAll(async () => {
    // Accepts connections and never answers: a server that hangs.
    silent = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    port = (silent.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it("a server that never answers: a failed connection within the timeout, not a hang", async () => {
    const t0 = Date.now();
    const f = await gatherPgStore(`postgres://sg@127.0.0.1:${port}/sg`, {}, 400);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(f.address).toBe(`127.0.0.1:${port}`);
    expect(f.connection).toEqual({ ok: false, code: "timeout", problem: "no answer within 0.4s" });
    expect(f.schema).toBeNull();
    expect(f.password).toEqual({ kind: "none" });
  });

  it("says which password source is set, and why a file is refused, never the value", async () => {
    const file = join(dir, "pg.password");
    writeFileSync(file, "s3cret-value-of-the-test\n", { mode: 0o600 });
    const url = `postgres://sg@127.0.0.1:${port}/sg`;
    const env = await gatherPgStore(url, { STALLGUARD_PG_PASSWORD: "s3cret-value-of-the-test" }, 200);
    expect(env.password).toEqual({ kind: "env" });
    const ok = await gatherPgStore(url, { STALLGUARD_PG_PASSWORD_FILE: file }, 200);
    expect(ok.password).toEqual({ kind: "file", path: file });
    chmodSync(file, 0o644);
    const open = await gatherPgStore(url, { STALLGUARD_PG_PASSWORD_FILE: file }, 200);
    expect(open.password.kind).toBe("bad");
    expect(JSON.stringify([env, ok, open])).not.toContain("s3cret");
  });

  it("a URL with a password is refused before anything connects, without echoing it", async () => {
    const f = await gatherPgStore("postgres://sg:hunter2@127.0.0.1:1/sg", {}, 200);
    expect(f.connection).toMatchObject({ ok: false, code: null });
    expect(f.connection.ok ? "" : f.connection.problem).toContain("holds a password");
    expect(JSON.stringify(f)).not.toContain("hunter2");
  });
});
