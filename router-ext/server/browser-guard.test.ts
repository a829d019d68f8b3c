import { describe, expect, it } from "vitest";
import { browserRefusal, hostAllowed, isJsonType, originAllowed } from "./browser-guard.ts";

describe("browser guard", () => {
  it("Host: IP literals, localhost and the configured host pass; any other name is a rebinding", () => {
    for (const h of [
      "127.0.0.1:4870",
      "localhost:4870",
      "[::1]:4870",
      "10.0.0.5",
      "app.localhost",
      "box.lan:4870",
    ])
      expect(hostAllowed(h, "box.lan"), h).toBe(true);
    for (const h of ["evil.example:4870", "127.0.0.1.nip.io", "", "a b", null])
      expect(hostAllowed(h, "127.0.0.1"), String(h)).toBe(false);
  });

  it("Origin: none, or this very server; null and foreign origins are refused", () => {
    expect(originAllowed(null, "127.0.0.1:4870")).toBe(true);
    expect(originAllowed("http://127.0.0.1:4870", "127.0.0.1:4870")).toBe(true);
    expect(originAllowed("http://localhost:4870", "127.0.0.1:4870")).toBe(false);
    expect(originAllowed("null", "127.0.0.1:4870")).toBe(false);
    expect(originAllowed("http://127.0.0.1:3000", "127.0.0.1:4870")).toBe(false);
  });

  it("JSON types only, on writes with a body; reads pass whatever they say", () => {
    expect(isJsonType("application/json; charset=utf-8")).toBe(true);
    expect(isJsonType("application/merge-patch+json")).toBe(true);
    for (const t of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", null])
      expect(isJsonType(t)).toBe(false);
    const req = {
      host: "127.0.0.1:1",
      origin: null,
      fetchSite: null,
      contentType: "text/plain",
      hasBody: true,
    };
    expect(browserRefusal({ ...req, method: "POST" }, "127.0.0.1")?.status).toBe(415);
    expect(browserRefusal({ ...req, method: "POST", hasBody: false }, "127.0.0.1")).toBeNull();
    expect(browserRefusal({ ...req, method: "GET" }, "127.0.0.1")).toBeNull();
    expect(browserRefusal({ ...req, method: "GET", host: "evil.example" }, "127.0.0.1")?.status).toBe(421);
    expect(
      browserRefusal(
        { ...req, method: "POST", contentType: "application/json", fetchSite: "cross-site" },
        "127.0.0.1",
      )?.status,
    ).toBe(403);
  });
});
