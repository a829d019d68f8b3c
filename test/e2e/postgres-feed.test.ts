// The replica feed on a real PostgreSQL: a change notified inside a committed
// transaction reaches the other replica's LISTEN connection, one in a rolled
// back transaction never does, and after the server restarts the feed
// reconnects by itself and asks for a reload (notifications may have been lost).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChangeFeed, notifyChange, RELOAD, startChangeFeed } from "../../router-ext/store/pg-notify.ts";
import { openPgSql, type PgSql } from "../../router-ext/store/pg-sql.ts";
import { parsePgTarget } from "../../router-ext/store/pg-target.ts";
import { type PgServer, pgBin, pgTitle, startPostgres } from "../helpers/postgres.ts";

/** Resolves when pred holds, polling every 10 ms; rejects after timeoutMs. */
async function until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.skipIf(!pgBin)(pgTitle("replica feed: LISTEN/NOTIFY on a real PostgreSQL"), () => {
  let server: PgServer;
  let writer: PgSql;
  let feed: ChangeFeed;
  const seen: string[] = [];
  const logs: string[] = [];

  beforeAll(async () => {
    server = await startPostgres();
    const target = parsePgTarget(server.url);
    writer = await openPgSql({ target, password: server.password });
    feed = await startChangeFeed({
      target,
      password: server.password,
      onChange: (k) => seen.push(k),
      log: (l) => logs.push(l),
      backoff: { firstMs: 50, maxMs: 500 },
    });
  });
  afterAll(async () => {
    await feed?.close();
    await writer?.close().catch(() => {});
    await server?.stop();
  });

  it("a change notified in a committed transaction arrives, on commit", async () => {
    let before = -1;
    await writer.tx(async (q) => {
      await notifyChange(q, "refusals");
      await new Promise((r) => setTimeout(r, 100));
      before = seen.length;
    });
    expect(before).toBe(0);
    await until(() => seen.includes("refusals"), 1000, "the refusals notification");
  });

  it("a change notified in a rolled-back transaction never arrives", async () => {
    await expect(
      writer.tx(async (q) => {
        await notifyChange(q, "knobs");
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    await writer.tx((q) => notifyChange(q, "marks"));
    await until(() => seen.includes("marks"), 1000, "the marks notification");
    expect(seen).not.toContain("knobs");
  });

  it("refuses a change kind that is not a short name", async () => {
    await expect(writer.tx((q) => notifyChange(q, "x'; DROP TABLE y"))).rejects.toThrow(/bad change kind/);
  });

  it("after a server restart the feed reconnects and asks for a reload, then hears changes again", async () => {
    seen.length = 0;
    server.restart();
    await until(() => seen.includes(RELOAD), 10_000, "the reload signal");
    expect(feed.connected()).toBe(true);
    expect(feed.reconnects()).toBe(1);
    expect(logs.some((l) => l.includes("connection lost"))).toBe(true);
    // The writer's pool lost its connections too; its next query reconnects.
    await writer.tx((q) => notifyChange(q, "caps"));
    await until(() => seen.includes("caps"), 1000, "the caps notification after the restart");
  });
});
