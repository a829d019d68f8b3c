import { describe, expect, it } from "vitest";
import { IdentityCache, identityHeaders } from "./identity.ts";

describe("identityHeaders", () => {
  it.each([
    [
      { sessionId: "ses_a", agent: "Sisyphus-Junior", parentId: "ses_p", version: "1.2.3" },
      {
        "X-Router-Conversation": "ses_a",
        "X-Router-Agent": "sisyphus-junior",
        "X-Router-Parent": "ses_p",
        "X-Stallguard-Plugin": "1.2.3",
      },
    ],
    [
      { sessionId: "ses_b", agent: "build", parentId: null, version: "dev" },
      {
        "X-Router-Conversation": "ses_b",
        "X-Router-Agent": "build",
        "X-Stallguard-Plugin": "dev",
      },
    ],
    [
      { sessionId: "ses_c", agent: "", parentId: undefined, version: "dev" },
      {
        "X-Router-Conversation": "ses_c",
        "X-Router-Agent": "unknown",
        "X-Stallguard-Plugin": "dev",
      },
    ],
  ])("%o", (input, want) => {
    expect(identityHeaders(input)).toEqual(want);
  });

  it("slugs long and odd agent names to the router's charset", () => {
    const h = identityHeaders({
      sessionId: "s",
      agent: `Atlas (Plan) ${"x".repeat(100)}`,
      parentId: null,
      version: "v",
    });
    expect(h["X-Router-Agent"]).toMatch(/^[a-z0-9_-]{1,64}$/);
  });
});

describe("IdentityCache", () => {
  it("knows parents from events without a lookup", async () => {
    let lookups = 0;
    const c = new IdentityCache({
      capacity: 10,
      lookup: async () => {
        lookups++;
        return null;
      },
    });
    c.setParent("ses_c", "ses_p");
    expect(await c.resolveParent("ses_c")).toBe("ses_p");
    expect(lookups).toBe(0);
  });

  it("looks a session up once, and never waits longer than the budget", async () => {
    let release: (v: string | null) => void = () => {};
    let lookups = 0;
    const c = new IdentityCache({
      capacity: 10,
      lookupBudgetMs: 20,
      lookup: () => {
        lookups++;
        return new Promise((r) => {
          release = r;
        });
      },
    });
    // The slow lookup is abandoned after the budget; a second request reuses it.
    expect(await c.resolveParent("ses_x")).toBeUndefined();
    expect(await c.resolveParent("ses_x")).toBeUndefined();
    expect(lookups).toBe(1);
    release("ses_root");
    await new Promise((r) => setTimeout(r, 0));
    expect(c.parentOf("ses_x")).toBe("ses_root");
    expect(await c.resolveParent("ses_x")).toBe("ses_root");
  });

  it("does not retry a failed lookup at once", async () => {
    let now = 1000;
    let lookups = 0;
    const c = new IdentityCache({
      capacity: 10,
      now: () => now,
      retryAfterMs: 500,
      lookup: async () => {
        lookups++;
        throw new Error("down");
      },
    });
    expect(await c.resolveParent("ses_x")).toBeUndefined();
    expect(await c.resolveParent("ses_x")).toBeUndefined();
    expect(lookups).toBe(1);
    now += 600;
    await c.resolveParent("ses_x");
    expect(lookups).toBe(2);
  });

  it("a known parent is not overwritten by a later event without one, and cycles are refused", () => {
    const seen: Array<[string, string | null]> = [];
    const c = new IdentityCache({ capacity: 10, onParent: (id, p) => seen.push([id, p]) });
    c.setParent("ses_c", "ses_p");
    c.setParent("ses_c", null);
    c.setParent("ses_self", "ses_self");
    expect(c.parentOf("ses_c")).toBe("ses_p");
    expect(c.parentOf("ses_self")).toBeNull();
    expect(seen).toEqual([
      ["ses_c", "ses_p"],
      ["ses_self", null],
    ]);
  });

  it("stays bounded", () => {
    const c = new IdentityCache({ capacity: 16 });
    for (let i = 0; i < 1000; i++) {
      c.setParent(`ses_${i}`, "ses_p");
      c.setAgent(`ses_${i}`, "build");
    }
    expect(c.size).toBe(16);
    expect(c.parentOf("ses_999")).toBe("ses_p");
    expect(c.parentOf("ses_0")).toBeUndefined();
    expect(c.agentOf("ses_0")).toBe("unknown");
  });
});
