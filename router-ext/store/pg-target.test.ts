import { describe, expect, it } from "vitest";
import { isPgUrl, parsePgTarget, showPgTarget } from "./pg-target.ts";

describe("parsePgTarget: a postgres:// URL without a secret", () => {
  it("reads user, host, port and database, 5432 by default", () => {
    expect(parsePgTarget("postgres://sg@db.internal:6543/stallguard")).toEqual({
      host: "db.internal",
      port: 6543,
      user: "sg",
      database: "stallguard",
    });
    expect(parsePgTarget("postgresql://sg@127.0.0.1/x").port).toBe(5432);
    expect(showPgTarget(parsePgTarget("postgres://sg@[::1]:5/x"))).toBe("postgres://sg@::1:5/x");
  });

  it("refuses a password in the URL and says where it goes instead", () => {
    expect(() => parsePgTarget("postgres://sg:hunter2@h/x")).toThrow(/STALLGUARD_PG_PASSWORD/);
    try {
      parsePgTarget("postgres://sg:hunter2@h/x");
    } catch (err) {
      expect((err as Error).message).not.toContain("hunter2");
    }
  });

  it("refuses a URL without user or database, or with options", () => {
    expect(() => parsePgTarget("postgres://h/x")).toThrow(/no user/);
    expect(() => parsePgTarget("postgres://sg@h")).toThrow(/no database/);
    expect(() => parsePgTarget("postgres://sg@h/x?sslmode=disable")).toThrow(/no \?options/);
  });

  it("tells a PostgreSQL URL from a SQLite path", () => {
    expect(isPgUrl("postgres://a@b/c")).toBe(true);
    expect(isPgUrl("/var/lib/stallguard.db")).toBe(false);
    expect(isPgUrl("mysql://a@b/c")).toBe(false);
  });
});
