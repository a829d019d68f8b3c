// GET /admin (the page) and GET /admin/app.js (its script). Neither needs the
// admin token: the page is static, and every API call it makes carries the
// token in a header. Mount with app.route("/", adminRoutes()).
import { Hono } from "hono";
import { type BundleOptions, createBundleLoader } from "./bundle.ts";
import { adminPage } from "./page.ts";

export interface AdminRoutesOptions extends BundleOptions {
  /** Logs a bundle that failed to load (the page then answers 500 for app.js). */
  log?: (line: string) => void;
}

const COMMON_HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/**
 * The admin page routes.
 *
 * @example app.route("/", adminRoutes());
 */
export function adminRoutes(opts: AdminRoutesOptions = {}): Hono {
  const page = adminPage();
  const bundle = createBundleLoader(opts);
  const app = new Hono();
  app.get("/admin", (c) =>
    c.body(page.html, 200, {
      ...COMMON_HEADERS,
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": page.csp,
      "x-frame-options": "DENY",
    }),
  );
  app.get("/admin/", (c) => c.redirect("/admin", 301));
  app.get("/admin/app.js", async (c) => {
    try {
      const { code } = await bundle();
      return c.body(code, 200, { ...COMMON_HEADERS, "content-type": "text/javascript; charset=utf-8" });
    } catch (err) {
      opts.log?.(`admin: bundle unavailable: ${(err as Error).message}`);
      return c.text("admin bundle unavailable; run npm run build", 500, COMMON_HEADERS);
    }
  });
  return app;
}
