import { describe, expect, it } from "vitest";
import { generateToken } from "../../io/secret-files.ts";
import { bearerToken, checkBindHost, isLoopbackHost, safeEqual } from "./security.ts";

describe("security", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.8.9.1", true],
    ["localhost", true],
    ["::1", true],
    ["[::1]", true],
    ["::ffff:127.0.0.1", true],
    ["0.0.0.0", false],
    ["::", false],
    ["192.168.1.5", false],
    ["example.com", false],
    ["127.0.0.1.evil.com", false],
    ["", false],
  ])("isLoopbackHost(%s) = %s", (host, want) => {
    expect(isLoopbackHost(host)).toBe(want);
  });

  it("binds a non-loopback address only with both tokens set", () => {
    expect(checkBindHost("127.0.0.1", {})).toEqual({ ok: true });
    const none = checkBindHost("0.0.0.0", {});
    expect(none.ok).toBe(false);
    if (!none.ok) expect(none.message).toContain("STALLGUARD_ADMIN_TOKEN and STALLGUARD_TOKEN");
    const one = checkBindHost("0.0.0.0", { STALLGUARD_ADMIN_TOKEN: "a" });
    expect(one.ok).toBe(false);
    if (!one.ok) expect(one.message).not.toContain("STALLGUARD_ADMIN_TOKEN");
    expect(checkBindHost("0.0.0.0", { STALLGUARD_ADMIN_TOKEN: "", STALLGUARD_TOKEN: "b" }).ok).toBe(false);
    expect(checkBindHost("0.0.0.0", { STALLGUARD_ADMIN_TOKEN: "a", STALLGUARD_TOKEN: "b" })).toEqual({
      ok: true,
    });
  });

  it("parses bearer headers and compares tokens", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken("bearer abc ")).toBe("abc");
    expect(bearerToken("Basic abc")).toBeNull();
    expect(bearerToken("Bearer a b")).toBeNull();
    expect(bearerToken(undefined)).toBeNull();
    expect(safeEqual("abc", "abc")).toBe(true);
    expect(safeEqual("abc", "abd")).toBe(false);
    expect(safeEqual("abc", "abcd")).toBe(false);
    const t = generateToken();
    expect(t).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(generateToken()).not.toBe(t);
  });
});
