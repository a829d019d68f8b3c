import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteSql } from "./sqlite-sql.ts";

describe("SqliteSql", () => {
  let db: Database.Database;
  let sql: SqliteSql;
  beforeEach(() => {
    db = new Database(":memory:");
    db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
    sql = new SqliteSql(db);
  });
  afterEach(() => db.close());

  it("binds positional and named parameters", async () => {
    await sql.run("INSERT INTO t (k, v) VALUES (?, ?)", ["a", 1]);
    await sql.run("INSERT INTO t (k, v) VALUES (@k, @v)", { k: "b", v: 2 ** 40 });
    expect(await sql.get<{ v: number }>("SELECT v FROM t WHERE k = @k", { k: "b" })).toEqual({ v: 2 ** 40 });
    expect(await sql.all<{ k: string }>("SELECT k FROM t ORDER BY k")).toEqual([{ k: "a" }, { k: "b" }]);
    expect(await sql.get("SELECT v FROM t WHERE k = ?", ["none"])).toBeUndefined();
    const r = await sql.run("UPDATE t SET v = v + 1 WHERE k IN (?, ?)", ["a", "b"]);
    expect(r.changes).toBe(2);
  });

  it("commits a transaction when its body resolves", async () => {
    const out = await sql.tx(async (q) => {
      await q.run("INSERT INTO t (k, v) VALUES (?, ?)", ["a", 1]);
      return (await q.get<{ n: number }>("SELECT COUNT(*) AS n FROM t"))?.n;
    });
    expect(out).toBe(1);
    expect(db.inTransaction).toBe(false);
    expect(await sql.all("SELECT k FROM t")).toEqual([{ k: "a" }]);
  });

  it("rolls back everything when the body throws, and passes the error on", async () => {
    await sql.run("INSERT INTO t (k, v) VALUES ('kept', 0)");
    await expect(
      sql.tx(async (q) => {
        await q.run("INSERT INTO t (k, v) VALUES ('gone', 1)");
        await new Promise((r) => setTimeout(r, 1));
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(db.inTransaction).toBe(false);
    expect(await sql.all("SELECT k FROM t")).toEqual([{ k: "kept" }]);
  });

  it("joins a nested tx on q into the outer transaction", async () => {
    await expect(
      sql.tx(async (q) => {
        await q.tx(async (inner) => {
          await inner.run("INSERT INTO t (k, v) VALUES ('inner', 1)");
        });
        expect(await q.get("SELECT k FROM t WHERE k = 'inner'")).toEqual({ k: "inner" });
        throw new Error("outer fails");
      }),
    ).rejects.toThrow("outer fails");
    expect(await sql.all("SELECT k FROM t")).toEqual([]);
  });

  it("makes a statement issued outside an open transaction wait for it (not roll back with it)", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const order: string[] = [];
    const txDone = sql
      .tx(async (q) => {
        await q.run("INSERT INTO t (k, v) VALUES ('in-tx', 1)");
        await gate;
        order.push("tx body done");
        throw new Error("roll back");
      })
      .catch(() => order.push("tx rolled back"));
    // Issued while the transaction is open: must not land inside it.
    const outside = sql
      .run("INSERT INTO t (k, v) VALUES ('outside', 2)")
      .then(() => order.push("outside ran"));
    const read = sql.all<{ k: string }>("SELECT k FROM t ORDER BY k");
    await new Promise((r) => setTimeout(r, 5));
    expect(order).toEqual([]);
    release();
    await Promise.all([txDone, outside]);
    expect(order).toEqual(["tx body done", "tx rolled back", "outside ran"]);
    expect(await read).toEqual([{ k: "outside" }]);
    expect(await sql.all("SELECT k FROM t")).toEqual([{ k: "outside" }]);
  });

  it("runs transactions one after another in the order they were asked for", async () => {
    const order: number[] = [];
    await Promise.all(
      [1, 2, 3].map((i) =>
        sql.tx(async (q) => {
          await new Promise((r) => setTimeout(r, 4 - i));
          await q.run("INSERT INTO t (k, v) VALUES (?, ?)", [`k${i}`, i]);
          order.push(i);
        }),
      ),
    );
    expect(order).toEqual([1, 2, 3]);
  });

  it("refuses a statement on a transaction that has ended", async () => {
    let kept: Parameters<Parameters<SqliteSql["tx"]>[0]>[0] | null = null;
    await sql.tx(async (q) => {
      kept = q;
    });
    await expect(
      (kept as unknown as SqliteSql).run("INSERT INTO t (k, v) VALUES ('late', 1)"),
    ).rejects.toThrow(/ended/);
  });
});
