// What the admin-page e2e files share: the router on loopback with an isolated
// config and database, a scripted upstream behind its gate, and headless
// Chromium (Debian's /usr/bin/chromium via playwright-core, the flags
// ../shared/spec/test-facts.md found to work here).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { expect } from "vitest";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import { type ModelServer, startModelServer } from "./model-server.ts";

export interface AdminEnv {
  srv: RunningServer;
  model: ModelServer;
  context: BrowserContext;
  /** Page errors and CSP complaints seen by any page opened with openPage. */
  problems: string[];
  openPage(fragment: string): Promise<Page>;
  /** An admin API call with the token; asserts a 200 and returns the JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: raw API JSON
  api(method: string, path: string, body?: unknown): Promise<any>;
  close(): Promise<void>;
}

/** Starts the upstream, the router (config.local.yaml = `localYaml`) and Chromium under `tmp`. */
export async function startAdminEnv(opts: {
  tmp: string;
  token: string;
  localYaml: string;
  reply?: string;
  viewport?: { width: number; height: number };
}): Promise<AdminEnv> {
  const localConfig = join(opts.tmp, "config.local.yaml");
  writeFileSync(localConfig, opts.localYaml);
  const model = await startModelServer({ script: () => ({ kind: "text", text: opts.reply ?? "ok" }) });
  const srv = await startServer({
    port: 0,
    host: "127.0.0.1",
    upstream: model.url,
    dbPath: join(opts.tmp, "stallguard.db"),
    configPath: localConfig,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: opts.tmp, STALLGUARD_ADMIN_TOKEN: opts.token },
    watchdog: false,
    log: () => {},
  });
  const context = await chromium.launchPersistentContext(join(opts.tmp, "chromium-profile"), {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: opts.viewport ?? { width: 1400, height: 1000 },
  });
  const problems: string[] = [];
  return {
    srv,
    model,
    context,
    problems,
    async openPage(fragment: string) {
      const page = await context.newPage();
      page.setDefaultTimeout(20_000);
      page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
      page.on("console", (m) => {
        if (/Content Security Policy|Trusted Type/i.test(m.text())) problems.push(`csp: ${m.text()}`);
      });
      await page.goto(`${srv.url}/admin${fragment}`);
      return page;
    },
    async api(method: string, path: string, body?: unknown) {
      const res = await fetch(`${srv.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${opts.token}`, "content-type": "application/json" },
        body: body === undefined ? null : JSON.stringify(body),
      });
      expect(res.status, `${method} ${path}`).toBe(200);
      return res.json();
    },
    async close() {
      await context.close();
      await srv.close();
      await model.close();
    },
  };
}
