import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createBundleLoader, packageRoot } from "./bundle.ts";
import { adminRoutes } from "./routes.ts";

const app = adminRoutes();

/** Characters outside printable ASCII (tab and newlines allowed). */
const nonAscii = (s: string) =>
  [...s].filter((ch) => {
    const c = ch.charCodeAt(0);
    return !(c === 9 || c === 10 || c === 13 || (c >= 32 && c < 127));
  });

describe("GET /admin", () => {
  it("serves the page with a CSP that allows only its own style block and script", async () => {
    const res = await app.request("/admin");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    const html = await res.text();
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? "";
    expect(csp).toContain(`'sha256-${createHash("sha256").update(style).digest("base64")}'`);
    // No external assets, no inline script, ASCII only.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html.match(/<script[^>]*>/g)).toEqual(['<script type="module" src="/admin/app.js">']);
    expect(nonAscii(html)).toEqual([]);
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("redirects /admin/ to /admin", async () => {
    const res = await app.request("/admin/");
    expect(res.status).toBe(301);
    expect(res.headers.get("location")).toBe("/admin");
  });
});

describe("GET /admin/app.js", () => {
  it("serves the bundled client, without innerHTML or eval", async () => {
    const res = await app.request("/admin/app.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/javascript/);
    const js = await res.text();
    expect(js).toContain("stallguard.admin.token");
    expect(js).not.toMatch(/\binnerHTML\b|\bouterHTML\b|insertAdjacentHTML|\beval\(/);
    expect(nonAscii(js)).toEqual([]);
  });
});

describe("createBundleLoader", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const fakeRoot = (withSource: boolean) => {
    const root = mkdtempSync(join(tmpdir(), "sg-admin-"));
    dirs.push(root);
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "stallguard", version: "9.9.9" }));
    mkdirSync(join(root, "dist/admin"), { recursive: true });
    writeFileSync(join(root, "dist/admin/app.js"), "/* dist */");
    if (withSource) {
      mkdirSync(join(root, "router-ext/admin/client"), { recursive: true });
      writeFileSync(join(root, "router-ext/admin/client/main.ts"), "export const v: string = 'src';\n");
    }
    return root;
  };

  it("serves dist when there is no source (an installed package)", async () => {
    const root = fakeRoot(false);
    expect(await createBundleLoader({ root })()).toEqual({ origin: "dist", code: "/* dist */" });
  });

  it("builds from source when dist is older than the client code", async () => {
    const root = fakeRoot(true);
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(root, "dist/admin/app.js"), old, old);
    const b = await createBundleLoader({ root })();
    expect(b.origin).toBe("built");
    expect(b.code).toContain("src");
  });

  it("builds from source when dist is missing, and fails clearly with neither", async () => {
    const root = fakeRoot(true);
    rmSync(join(root, "dist"), { recursive: true });
    expect((await createBundleLoader({ root })()).origin).toBe("built");
    rmSync(join(root, "router-ext"), { recursive: true });
    await expect(createBundleLoader({ root })()).rejects.toThrow(/admin bundle missing/);
  });

  it("finds the package root from a nested directory", () => {
    const root = packageRoot(__dirname);
    expect(join(root, "router-ext/admin")).toBe(__dirname);
  });
});
