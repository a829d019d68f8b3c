// The behaviour breaker end to end: the real server (SQLite file, gate, /progress,
// admin API) on loopback in front of a scripted model server. Recorded traffic
// (the real-trajectory corpus beside the repo, else the repo's own recordings
// from the real opencode binary in test/fixtures/recorded, so CI always runs
// it) is replayed as the plugin would
// send it: each tool call is one chat request through the gate with the
// session's X-Router-Conversation header, and every verdict change the core's
// SessionForest produces is posted to /progress. Sessions labelled "loop" run
// mostly on lab/loopy, healthy ones mostly on lab/steady.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import {
  formatConfigIssues,
  observationsFromMessages,
  observeOptions,
  parseConfig,
  policyFromConfig,
  SessionForest,
  type Transition,
  toTransition,
} from "../../shared/index.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { routerEnv } from "../helpers/router-env.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const REAL = fileURLToPath(new URL("../../../shared/corpus/real-trajectories", import.meta.url));
const RECORDED = join(ROOT, "test", "fixtures", "recorded");
const CORPUS = existsSync(join(REAL, "labels.json")) ? REAL : RECORDED;
console.log(
  `breaker replay traffic from ${CORPUS === REAL ? "the real-trajectory corpus" : "test/fixtures/recorded"}`,
);
/** The i-th recording of a kind, reused under fresh session ids when the corpus is small. */
const pick = (list: readonly Recorded[], i: number): Recorded => list[i % list.length] as Recorded;

const TOKEN = "breaker-e2e-admin-token-0123";
const LOOPY = "lab/loopy";
const STEADY = "lab/steady";
const FALLBACK = "lab/fallback";

// biome-ignore lint/suspicious/noExplicitAny: raw API JSON
type Json = any;

interface Recorded {
  id: string;
  label: "loop" | "healthy" | "unclear";
  // biome-ignore lint/suspicious/noExplicitAny: stored opencode messages
  messages: any[];
}

function corpus(): Recorded[] {
  const labels = JSON.parse(readFileSync(join(CORPUS, "labels.json"), "utf8")) as Record<
    string,
    { label: Recorded["label"] }
  >;
  return readdirSync(CORPUS)
    .filter((f) => f.endsWith(".json") && f !== "labels.json")
    .sort()
    .map((f) => JSON.parse(readFileSync(join(CORPUS, f), "utf8")))
    .filter((d) => !d.info.parentID) // replayed as roots: a recorded child is judged in its tree
    .map((d) => ({ id: d.info.id, label: labels[d.info.id]?.label ?? "unclear", messages: d.messages }));
}

function policy() {
  const cfg = parseConfig([
    { source: "config/config.yaml", text: readFileSync(join(ROOT, "config/config.yaml"), "utf8") },
  ]);
  if (!cfg.ok) throw new Error(formatConfigIssues(cfg.issues));
  return policyFromConfig(cfg.config);
}

interface Receiver {
  url: string;
  bodies: Json[];
  close(): Promise<void>;
}

/** A webhook receiver for the notifier's alerts. */
async function receiver(): Promise<Receiver> {
  const bodies: Json[] = [];
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (d: string) => {
      raw += d;
    });
    req.on("end", () => {
      try {
        bodies.push(JSON.parse(raw));
      } catch {
        bodies.push(raw);
      }
      res.writeHead(200).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    bodies,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

class Harness {
  srv!: RunningServer;
  model!: ModelServer;
  hook!: Receiver;
  tmp = mkdtempSync(join(tmpdir(), "stallguard-breaker-e2e-"));
  localConfig = join(this.tmp, "config.local.yaml");
  readonly policy = policy();
  posted = 0;

  async start(): Promise<void> {
    this.model ??= await startModelServer({ script: () => ({ kind: "text", text: "ok" }) });
    this.hook ??= await receiver();
    writeFileSync(
      this.localConfig,
      [
        "watchdog:",
        "  enabled: false",
        "breaker:",
        "  fallbacks:",
        `    ${LOOPY}: ${FALLBACK}`,
        "notifications:",
        "  channels:",
        "    - name: hook",
        "      type: webhook",
        `      url: ${this.hook.url}`,
        "      min_severity: critical",
        "",
      ].join("\n"),
    );
    this.srv = await startServer({
      port: 0,
      host: "127.0.0.1",
      upstream: this.model.url,
      dbPath: join(this.tmp, "stallguard.db"),
      configPath: this.localConfig,
      env: routerEnv(this.tmp, { STALLGUARD_ADMIN_TOKEN: TOKEN }),
      watchdog: false,
      log: () => {},
    });
  }

  async stop(): Promise<void> {
    await this.srv?.close();
  }

  async close(): Promise<void> {
    await this.srv?.close();
    await this.model?.close();
    await this.hook?.close();
    rmSync(this.tmp, { recursive: true, force: true });
  }

  async api(method: string, path: string, body?: unknown, status = 200): Promise<Json> {
    const res = await fetch(`${this.srv.url}${path}`, {
      method,
      // /progress takes the plugin token, the admin API the admin token.
      headers: {
        authorization: `Bearer ${path === "/progress" ? this.srv.pluginToken : TOKEN}`,
        "content-type": "application/json",
      },
      body: body === undefined ? null : JSON.stringify(body),
    });
    expect(res.status, `${method} ${path}`).toBe(status);
    return res.json();
  }

  /** One chat request through the real gate, as opencode with the plugin sends it. */
  async chat(model: string, session: string, parent: string | null = null) {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      authorization: `Bearer ${this.srv.clientKeys[0]?.key}`,
      "x-router-conversation": session,
    };
    if (parent) headers["x-router-parent"] = parent;
    const res = await fetch(`${this.srv.url}/v1/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model, messages: [{ role: "user", content: "go" }] }),
    });
    await res.text();
    return { status: res.status, breaker: res.headers.get("x-stallguard-breaker") };
  }

  /**
   * Replays one recorded session under a new id on `model`: a gate request per
   * tool call, the core's verdict changes posted to /progress as the plugin
   * would (at = now, last_landed_at mapped onto the wall clock of the replay).
   */
  async replay(rec: Recorded, id: string, model: string, parent: string | null = null): Promise<string[]> {
    const forest = new SessionForest(this.policy);
    if (parent) forest.setParent(id, parent);
    const obs = observationsFromMessages(
      { id, parentId: parent, directory: null },
      rec.messages,
      observeOptions(this.policy),
    );
    const wall: Array<[number, number]> = [];
    const verdicts: string[] = [];
    for (const o of obs) {
      if (o.kind === "tool") {
        const r = await this.chat(model, id, parent);
        expect(r.status).toBe(200);
        wall.push([o.call.time, Date.now()]);
      }
      for (const c of forest.observe(o).changes) {
        const t: Transition = toTransition(c, { source: "plugin", report: "", pluginVersion: "0.1.0" });
        const landed = t.signals.last_landed_at;
        const mapped =
          landed === null ? null : ([...wall].reverse().find(([rt]) => rt <= landed)?.[1] ?? null);
        const body = { ...t, at: Date.now(), signals: { ...t.signals, last_landed_at: mapped } };
        const res = await this.api("POST", "/progress", body);
        this.posted += res.accepted;
        verdicts.push(t.verdict);
      }
    }
    return verdicts;
  }
}

const recs = corpus();
const loops = recs.filter((r) => r.label === "loop");
const healthy = recs.filter((r) => r.label === "healthy");

describe("behaviour breaker (real server, real gate, real SQLite, replayed traffic)", () => {
  const hx = new Harness();

  beforeAll(() => hx.start());
  afterAll(() => hx.close());

  it("trips exactly the model whose sessions loop, with evidence, a critical alert and the metric", async () => {
    expect(loops.length).toBeGreaterThanOrEqual(2);
    expect(healthy.length).toBeGreaterThanOrEqual(2);
    // lab/steady: five healthy runs and one loop; lab/loopy: four loops and one healthy run.
    const plan: Array<[Recorded, string]> = [
      ...[0, 1, 2, 3, 4].map((i): [Recorded, string] => [pick(healthy, i), STEADY]),
      [pick(loops, 4), STEADY],
      [pick(healthy, 5), LOOPY],
      ...[0, 1, 2, 3].map((i): [Recorded, string] => [pick(loops, i), LOOPY]),
    ];
    const flagged = new Map<string, string[]>();
    for (const [i, [rec, model]] of plan.entries()) {
      const id = `ses_rp${i}_${rec.id.slice(4)}`;
      const v = await hx.replay(rec, id, model);
      if (v.some((x) => x !== "ok")) flagged.set(id, v);
    }
    expect(hx.posted).toBeGreaterThan(0);
    const body = await hx.api("GET", "/api/breaker");
    const byModel = new Map<string, Json>(body.models.map((m: Json) => [m.model, m]));
    expect(byModel.get(LOOPY)?.phase).toBe("open");
    expect(byModel.get(STEADY)?.phase).toBe("closed");
    expect(byModel.get(LOOPY)?.fallback).toBe(FALLBACK);
    expect(body.trips).toHaveLength(1);
    const trip = body.trips[0];
    console.log(
      `breaker replay: ${hx.model.requests.length} gate requests, ${hx.posted} transitions; trip ${trip.stalled_trees}/${trip.served_trees} trees, rate ${trip.rate} vs others ${trip.others_rate}, x${trip.ratio}`,
    );
    expect(trip.model).toBe(LOOPY);
    expect(trip.fallback).toBe(FALLBACK);
    expect(trip.stalled_trees).toBeGreaterThanOrEqual(3);
    expect(trip.ratio).toBeGreaterThanOrEqual(3);
    expect(trip.window_ms).toBe(60 * 60_000);
    // The evidence names replayed loop sessions served by lab/loopy, and nothing else.
    const loopyIds = new Set(plan.map(([r, m], i) => (m === LOOPY ? `ses_rp${i}_${r.id.slice(4)}` : "")));
    expect(trip.evidence.length).toBeGreaterThanOrEqual(3);
    for (const e of trip.evidence) {
      expect(loopyIds.has(e.session_id), e.session_id).toBe(true);
      expect(flagged.has(e.session_id), e.session_id).toBe(true);
      expect(["stalling", "looping"]).toContain(e.verdict);
    }
    // The critical alert went out through the notifier.
    await expect.poll(() => hx.hook.bodies.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(JSON.stringify(hx.hook.bodies)).toContain(`model ${LOOPY} tripped`);
    const metrics = await (await fetch(`${hx.srv.url}/metrics`)).text();
    expect(metrics).toContain(`stallguard_breaker_state{model="${LOOPY}"} 2`);
    expect(metrics).not.toContain(`stallguard_breaker_state{model="${STEADY}"} 2`);
  });

  it("sends a tripped model's requests to the fallback through the real gate, and says so", async () => {
    const before = hx.model.requests.length;
    const r = await hx.chat(LOOPY, "ses_after_trip");
    expect(r.status).toBe(200);
    expect(r.breaker).toBe(`${LOOPY} -> ${FALLBACK}`);
    expect(hx.model.requests[before]?.body.model).toBe(FALLBACK);
    const s = await hx.chat(STEADY, "ses_after_trip2");
    expect(s.breaker).toBeNull();
    expect(hx.model.requests[before + 1]?.body.model).toBe(STEADY);
  });

  it("keeps the open breaker and its trip across a restart", async () => {
    await hx.stop();
    await hx.start();
    const body = await hx.api("GET", "/api/breaker");
    expect(body.models.find((m: Json) => m.model === LOOPY)?.phase).toBe("open");
    expect(body.trips).toHaveLength(1);
    const before = hx.model.requests.length;
    expect((await hx.chat(LOOPY, "ses_after_restart")).breaker).toBe(`${LOOPY} -> ${FALLBACK}`);
    expect(hx.model.requests[before]?.body.model).toBe(FALLBACK);
  });

  it("Resume closes it: the model gets its own traffic again; bad bodies are 400", async () => {
    const bad = await hx.api("POST", `/api/breaker/${encodeURIComponent(LOOPY)}/resume`, { who: "x" }, 400);
    expect(bad.issues.join(" ")).toContain("who");
    const res = await hx.api("POST", `/api/breaker/${encodeURIComponent(LOOPY)}/resume`, { by: "e2e" });
    expect(res).toMatchObject({ model: LOOPY, phase: "closed", by: "e2e" });
    const before = hx.model.requests.length;
    const r = await hx.chat(LOOPY, "ses_after_resume");
    expect(r.breaker).toBeNull();
    expect(hx.model.requests[before]?.body.model).toBe(LOOPY);
    const body = await hx.api("GET", "/api/breaker");
    expect(body.models.find((m: Json) => m.model === LOOPY)).toMatchObject({
      phase: "closed",
      resumed_by: "e2e",
    });
    expect(body.trips).toHaveLength(1);
    // Unauthenticated: 401.
    expect((await fetch(`${hx.srv.url}/api/breaker`)).status).toBe(401);
  });
});

describe("behaviour breaker: one hard task does not trip a model", () => {
  const hx = new Harness();

  beforeAll(() => hx.start());
  afterAll(() => hx.close());

  it("several stuck sessions in one tree on lab/loopy leave it closed", async () => {
    const root = "ses_hard_root";
    // The tree: an orchestrator (healthy run) and three workers that loop, all on lab/loopy.
    await hx.replay(pick(healthy, 0), root, LOOPY);
    const stuck: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = `ses_hard_w${i}`;
      const v = await hx.replay(pick(loops, i), id, LOOPY, root);
      if (v.some((x) => x !== "ok")) stuck.push(id);
    }
    expect(stuck.length).toBeGreaterThanOrEqual(3);
    // Other traffic on lab/loopy and lab/steady in the same window.
    for (let i = 1; i < 3; i++) await hx.replay(pick(healthy, i), `ses_hard_l${i}`, LOOPY);
    for (let i = 3; i < 6; i++) await hx.replay(pick(healthy, i), `ses_hard_s${i}`, STEADY);
    const body = await hx.api("GET", "/api/breaker");
    expect(body.trips).toEqual([]);
    const loopy = body.models.find((m: Json) => m.model === LOOPY);
    expect(loopy).toMatchObject({ phase: "closed", stalled_trees: 1 });
    expect(loopy.served_trees).toBeGreaterThanOrEqual(3);
    const before = hx.model.requests.length;
    expect((await hx.chat(LOOPY, "ses_hard_after")).breaker).toBeNull();
    expect(hx.model.requests[before]?.body.model).toBe(LOOPY);
  });
});
