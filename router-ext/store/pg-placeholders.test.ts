import { describe, expect, it } from "vitest";
import { toPgStatement } from "./pg-placeholders.ts";
import { sqlSegments } from "./sql-segments.ts";

describe("toPgStatement: ? and @name as PostgreSQL's $n", () => {
  it("numbers ? in order and keeps the values in that order", () => {
    expect(toPgStatement("SELECT * FROM t WHERE a = ? AND b > ? LIMIT ?", ["x", 5, 10])).toEqual({
      text: "SELECT * FROM t WHERE a = $1 AND b > $2 LIMIT $3",
      values: ["x", 5, 10],
    });
  });

  it("numbers @name by first appearance and reuses the number of a repeated name", () => {
    const st = toPgStatement(
      "INSERT INTO t (k, v, at) VALUES (@k, @v, @at) ON CONFLICT (k) DO UPDATE SET v = @v, at = excluded.at WHERE t.k = @k",
      { at: 7, v: null, k: "key" },
    );
    expect(st.text).toBe(
      "INSERT INTO t (k, v, at) VALUES ($1, $2, $3) ON CONFLICT (k) DO UPDATE SET v = $2, at = excluded.at WHERE t.k = $1",
    );
    expect(st.values).toEqual(["key", null, 7]);
  });

  it("leaves ? and @ inside string literals, quoted identifiers and comments alone", () => {
    const sql = `SELECT 'what?' AS q, 'a@b' AS e, 'it''s ?' AS s, "odd?col" FROM t -- why?
/* @nope ? */ WHERE a = ?`;
    const st = toPgStatement(sql, [1]);
    expect(st.text).toBe(sql.replace(/a = \?$/, "a = $1"));
    expect(st.values).toEqual([1]);
  });

  it("does not take a word@word or a cast for a placeholder", () => {
    expect(toPgStatement("SELECT x::text, user@host FROM t WHERE a = @a", { a: 1 }).text).toBe(
      "SELECT x::text, user@host FROM t WHERE a = $1",
    );
  });

  it("refuses a count of ? that does not match the values, and a name without a value", () => {
    expect(() => toPgStatement("SELECT ?, ?", [1])).toThrow(/more `\?` placeholders/);
    expect(() => toPgStatement("SELECT ?", [1, 2])).toThrow(/1 `\?` placeholder\(s\) but 2/);
    expect(() => toPgStatement("SELECT @a, @b", { a: 1 })).toThrow(/no value for the placeholder @b/);
    expect(() => toPgStatement("SELECT ?", { a: 1 })).toThrow(/positional/);
    expect(() => toPgStatement("SELECT @a", [1])).toThrow(/named/);
  });

  it("a statement without placeholders keeps its text", () => {
    expect(toPgStatement("SELECT 1", [])).toEqual({ text: "SELECT 1", values: [] });
  });
});

describe("sqlSegments", () => {
  it("gives the text back when joined, with literals and comments apart", () => {
    const sql = `a 'b''c' "d" -- e\nf /* g */ h 'unterminated`;
    const segs = sqlSegments(sql);
    expect(segs.map((s) => s.text).join("")).toBe(sql);
    expect(segs.filter((s) => !s.code).map((s) => s.text)).toEqual([
      "'b''c'",
      '"d"',
      "-- e\n",
      "/* g */",
      "'unterminated",
    ]);
  });
});
