import { describe, expect, it } from "vitest";
import { tickDue, tryLeadTick } from "./replica-lead.ts";
import type { Sql } from "./sql.ts";

describe("tickDue: one watchdog tick an interval between replicas", () => {
  it("is due with no tick stored, or once the last is half an interval old", () => {
    expect(tickDue(null, 1000, 60_000)).toBe(true);
    expect(tickDue(1_000_000 - 29_999, 1_000_000, 60_000)).toBe(false);
    expect(tickDue(1_000_000 - 30_000, 1_000_000, 60_000)).toBe(true);
  });
});

describe("tryLeadTick on SQLite", () => {
  it("always leads (one process), asking the database nothing", async () => {
    const sqlite = { engine: "sqlite" } as Sql;
    expect(await tryLeadTick(sqlite)).toBe(true);
  });
});
