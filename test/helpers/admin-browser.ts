// What the admin-page e2e files share: the router on loopback with an isolated
// config and database, a scripted upstream behind its gate, and headless
// Chromium (Debian's /usr/bin/chromium via playwright-core, the flags
// ../shared/spec/test-facts.md found to work here).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import type { RunningServer } from "../../router-ext/server/start.ts";
import { type ModelServer, startModelServer } from "./model-server.ts";
import { routerEnv } from "./router-env.ts";
import { startTestRouter } from "./test-router.ts";

// biome-ignore lint/suspicious/noExplicitAny: raw API JSON
export type Json = any;

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
  /** One chat request through the gate with these headers (identity, model); the answer read whole. */
  // biome-ignore lint/suspicious/noExplicitAny: raw API JSON
  chat(headers: Record<string, string>, model?: string): Promise<{ res: Response; body: any }>;
  close(): Promise<void>;
}

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/", import.meta.url));

/** Where a screenshot named `name` goes: test-artifacts/ (created), for a human to look at after a run. */
export function artifact(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return join(ARTIFACTS, name);
}

/** One column of numbers in a table as drawn: its header's alignment, and how far its header's text ends from each number's. */
export interface NumberColumn {
  header: string;
  align: string;
  /** |right edge of the header's text - right edge of the number's text| per body row, in px. */
  offsets: number[];
}

/** The columns of `table` whose body cells are numbers (td.num), measured in the page. */
export function numberColumns(page: Page, table: string): Promise<NumberColumn[]> {
  return page.locator(table).evaluate((t) => {
    const textRight = (el: Element) => {
      const r = document.createRange();
      r.selectNodeContents(el);
      return r.getBoundingClientRect().right;
    };
    const heads = [...t.querySelectorAll("thead th")];
    const rows = [...t.querySelectorAll("tbody tr")].filter((r) => r.children.length === heads.length);
    return heads.flatMap((th, i) => {
      const cells = rows
        .map((r) => r.children[i])
        .filter((c): c is Element => !!c?.classList.contains("num"));
      if (cells.length === 0) return [];
      return [
        {
          header: th.textContent ?? "",
          align: getComputedStyle(th).textAlign,
          offsets: cells.map((c) => Math.round(Math.abs(textRight(th) - textRight(c)))),
        },
      ];
    });
  });
}

/** Every number column's header is right-aligned and ends where its numbers end (within 1 px). */
export async function expectNumbersUnderHeaders(page: Page, table: string, headers: string[]): Promise<void> {
  const cols = await numberColumns(page, table);
  expect(cols.map((c) => c.header)).toEqual(headers);
  for (const c of cols) {
    expect(c.align, c.header).toBe("right");
    expect(Math.max(...c.offsets), c.header).toBeLessThanOrEqual(1);
  }
}

/** Headless Chromium (Debian's) with a profile in `profileDir`. */
export function launchChromium(
  profileDir: string,
  viewport = { width: 1400, height: 1000 },
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
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
    viewport,
  });
}

/** Starts the upstream, the router (config.local.yaml = `localYaml`) and Chromium under `tmp`. */
export async function startAdminEnv(opts: {
  tmp: string;
  token: string;
  localYaml: string;
  reply?: string;
  viewport?: { width: number; height: number };
}): Promise<AdminEnv> {
  const model = await startModelServer({ script: () => ({ kind: "text", text: opts.reply ?? "ok" }) });
  const srv = await startTestRouter(opts.tmp, opts.localYaml, {
    upstream: model.url,
    env: routerEnv(opts.tmp, { STALLGUARD_ADMIN_TOKEN: opts.token }),
  });
  const context = await launchChromium(join(opts.tmp, "chromium-profile"), opts.viewport);
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
        // /progress takes the plugin token, the admin API the admin token.
        headers: {
          authorization: `Bearer ${path === "/progress" ? srv.pluginToken : opts.token}`,
          "content-type": "application/json",
        },
        body: body === undefined ? null : JSON.stringify(body),
      });
      expect(res.status, `${method} ${path}`).toBe(200);
      return res.json();
    },
    async chat(headers: Record<string, string>, model = "scripted") {
      const res = await fetch(`${srv.url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${srv.clientKeys[0]?.key}`,
          ...headers,
        },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "go" }] }),
      });
      const text = await res.text();
      return { res, body: text ? JSON.parse(text) : null };
    },
    async close() {
      await context.close();
      await srv.close();
      await model.close();
    },
  };
}

/**
 * The file's admin environment (router config `localYaml`, admin `token`):
 * started before its tests, stopped and removed after them.
 */
export function useAdminEnv(
  token: string,
  localYaml: string,
  opts: Omit<Parameters<typeof startAdminEnv>[0], "tmp" | "token" | "localYaml"> = {},
): AdminEnv {
  let env: AdminEnv | undefined;
  let tmp = "";
  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "stallguard-admin-"));
    env = await startAdminEnv({ ...opts, token, localYaml, tmp });
  });
  afterAll(async () => {
    await env?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });
  const live = (): AdminEnv => {
    if (!env) throw new Error("the admin environment has not started");
    return env;
  };
  return {
    get srv() {
      return live().srv;
    },
    get model() {
      return live().model;
    },
    get context() {
      return live().context;
    },
    get problems() {
      return live().problems;
    },
    openPage: (fragment) => live().openPage(fragment),
    api: (method, path, body) => live().api(method, path, body),
    chat: (headers, model) => live().chat(headers, model),
    close: () => live().close(),
  };
}
