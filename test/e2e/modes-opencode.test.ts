import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, test } from "vitest";
import type { RunningServer } from "../../router-ext/server/start.ts";
import {
  type ModelReply,
  type ModelRequest,
  type ModelServer,
  scriptRouter,
} from "../helpers/model-server.ts";
import type { OpencodeServer } from "../helpers/opencode.ts";
import { type PluginStack, pluginStackPerFile } from "../helpers/plugin-stack.ts";

const ADMIN = "modes-opencode-admin";
const TOKEN = "modes-opencode-plugin";

type Msg = {
  info: { role: string; error?: { name?: string } };
  parts: Array<{
    type: string;
    text?: string;
    tool?: string;
    state?: { status?: string; metadata?: Record<string, unknown> };
  }>;
};

describe("modes in real opencode", () => {
  const router = scriptRouter();
  let stack: PluginStack, model: ModelServer, srv: RunningServer, oc: OpencodeServer;
  const auth = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
  const setKnob = async (path: string, value: unknown) => {
    const res = await fetch(`${srv.url}/api/knobs`, {
      method: "PUT",
      headers: auth,
      body: JSON.stringify({ path, value }),
    });
    expect(res.status).toBe(200);
  };
  const db = <T>(sql: string, ...args: unknown[]): T[] => {
    const ro = new Database(srv.dbPath, { readonly: true });
    try {
      return ro.prepare(sql).all(...args) as T[];
    } finally {
      ro.close();
    }
  };
  const compactionsOf = (id: string) => model.requests.filter((r) => r.isCompaction && r.sessionId === id);
  const compacted = (id: string) => compactionsOf(id).length > 0;
  const read = (): Extract<ModelReply, { kind: "tools" }> => ({
    kind: "tools",
    calls: [{ name: "read", args: { filePath: join(oc.projectDir, "README.md") } }],
  });
  const lastText = async (id: string) => {
    const msgs = (await oc.messages(id)) as Msg[];
    const a = msgs.filter((m) => m.info.role === "assistant").at(-1);
    return a?.parts.find((p) => p.type === "text")?.text;
  };
  const bodyText = (r: ModelRequest) => JSON.stringify(r.body);
  /** Gate requests of a session from its looping transition on, and the time to its last one. */
  const figures = (id: string) => {
    const at = (
      db<{ received_at: number }>(
        "SELECT received_at FROM transitions WHERE session_id = ? AND verdict = 'looping'",
        id,
      )[0] as { received_at: number }
    ).received_at;
    const rows = db<{ agent: string; status: number; started_at: number; duration_ms: number }>(
      "SELECT agent, status, started_at, duration_ms FROM requests WHERE session_id = ? AND started_at >= ? ORDER BY seq",
      id,
      at,
    );
    const last = rows.at(-1);
    const ms = last ? last.started_at + last.duration_ms - at : 0;
    return `${rows.length} gate requests after detection (${rows.map((r) => `${r.agent}/${r.status}`).join(", ")}), detection -> continued turn done ${ms} ms`;
  };

  pluginStackPerFile(
    { tmpPrefix: "sg-modes-oc-", script: router.script, adminToken: ADMIN, pluginToken: TOKEN },
    (s) => {
      stack = s;
      ({ model, srv, oc } = stack);
    },
  );

  test("auto_compact: a looping session is compacted with the report and continues, no refusal", async () => {
    await setKnob("progress.mode", "auto_compact");
    const s = await oc.createSession({ title: "compact me" });
    router.on(s.id, () => (compacted(s.id) ? { kind: "text", text: "compacted and done" } : read()));
    await oc.promptAsync(s.id, "read it");
    await expect.poll(() => compacted(s.id), { timeout: 60_000, interval: 200 }).toBe(true);
    const c = compactionsOf(s.id)[0] as ModelRequest;
    expect(bodyText(c)).toContain("stallguard");
    expect(bodyText(c)).toContain("Avoid:");
    await expect.poll(() => lastText(s.id), { timeout: 60_000, interval: 300 }).toBe("compacted and done");
    expect(db("SELECT 1 FROM requests WHERE session_id = ? AND refused = 1", s.id)).toEqual([]);
    const results = db<{ ok: number; action: string }>(
      "SELECT ok, action FROM mode_directives WHERE session_id = ?",
      s.id,
    );
    expect(results).toEqual([{ ok: 1, action: "compact" }]);
    // Nothing was aborted: the compaction joined the running loop.
    const msgs = (await oc.messages(s.id)) as Msg[];
    expect(msgs.some((m) => m.info.error?.name === "MessageAbortedError")).toBe(false);
    console.log(`auto_compact: ${figures(s.id)}`);
  }, 120_000);

  test("auto_limit_context: the gate answers 413, opencode compacts on its own and continues", async () => {
    await setKnob("progress.mode", "auto_limit_context");
    await setKnob("progress.context_cap", 1000);
    const s = await oc.createSession({ title: "cap me" });
    router.on(s.id, () =>
      compacted(s.id)
        ? { kind: "text", text: "capped and done", usage: { prompt_tokens: 500, completion_tokens: 5 } }
        : read(),
    );
    await oc.promptAsync(s.id, "read it");
    await expect.poll(() => compacted(s.id), { timeout: 60_000, interval: 200 }).toBe(true);
    await expect.poll(() => lastText(s.id), { timeout: 60_000, interval: 300 }).toBe("capped and done");
    const refused = db<{ status: number; agent: string }>(
      "SELECT status, agent FROM requests WHERE session_id = ? AND refused = 1",
      s.id,
    );
    expect(refused).toEqual([{ status: 413, agent: "build" }]);
    console.log(`auto_limit_context: ${figures(s.id)}`);
    // The compaction was opencode's own (overflow), through the gate.
    expect(
      db("SELECT 1 FROM requests WHERE session_id = ? AND agent = 'compaction' AND status = 200", s.id),
    ).toHaveLength(1);
  }, 120_000);

  // auto_recover on one orchestrator tree, three rounds: stage 1, stage 2 (after
  // a router restart), stage 3 (the hard stop), then Resume.
  const tree = { root: "", round: 0, delegated: 0, compactionsAtStart: 0, workers: [] as string[] };
  const low = { prompt_tokens: 500, completion_tokens: 5 };
  const orchestrator = (req: ModelRequest): ModelReply => {
    if (req.parentSessionId === tree.root) {
      if (req.sessionId && !tree.workers.includes(req.sessionId)) tree.workers.push(req.sessionId);
      return { ...read(), usage: low };
    }
    if (compactionsOf(tree.root).length > tree.compactionsAtStart)
      return { kind: "text", text: `recovered round ${tree.round}`, usage: low };
    // One worker a round: when the stopped worker's task returns before the root's abort lands
    // (a race under load), the orchestrator waits instead of handing out a second worker.
    if (req.lastUserText === `delegate ${tree.round}` && tree.delegated < tree.round) {
      tree.delegated = tree.round;
      return {
        kind: "tools",
        calls: [
          { name: "task", args: { description: "read", prompt: "read README.md", subagent_type: "general" } },
        ],
        usage: low,
      };
    }
    return { kind: "hang" }; // the orchestrator waits in its task until it is aborted
  };
  const startRound = async (n: number) => {
    tree.round = n;
    tree.compactionsAtStart = compactionsOf(tree.root).length;
    await oc.promptAsync(tree.root, `delegate ${n}`);
  };
  const treeState = () =>
    JSON.parse(
      (
        db<{ state: string }>("SELECT state FROM tree_modes WHERE root_id = ?", tree.root)[0] as {
          state: string;
        }
      ).state,
    ) as {
      stage: number;
      recoveries: number[];
      hardStop: boolean;
      capContext: boolean;
      refusedSessions: string[];
    };
  const recoverRound = async (n: number) => {
    const t0 = Date.now();
    const requestsBefore = model.requests.length;
    await startRound(n);
    await expect
      .poll(() => compactionsOf(tree.root).length > tree.compactionsAtStart, {
        timeout: 90_000,
        interval: 100,
      })
      .toBe(true);
    const c = compactionsOf(tree.root).at(-1) as ModelRequest;
    expect(bodyText(c)).toContain("Avoid:");
    expect(c.headers["x-router-agent"]).toBe("compaction");
    await expect
      .poll(() => lastText(tree.root), { timeout: 60_000, interval: 100 })
      .toBe(`recovered round ${n}`);
    const done = Date.now();
    // The stuck session is whichever the detector named. In round 1 it is the
    // worker; later the root's rolled-up history can cross a threshold first.
    const w = (
      db<{ session_id: string }>(
        "SELECT session_id FROM mode_directives WHERE root_id = ? AND created_at >= ? ORDER BY created_at DESC LIMIT 1",
        tree.root,
        t0,
      )[0] as { session_id: string }
    ).session_id;
    if (n === 1) expect(w).toBe(tree.workers.at(-1));
    const log = db<{ state: string; changed_at: number }>(
      "SELECT state, changed_at FROM refusal_log WHERE scope = 'session' AND key = ? ORDER BY seq",
      w,
    );
    expect(log.map((r) => r.state)).toEqual(["stopped", "running"]);
    const gate = (await (await fetch(`${srv.url}/gate/${w}`)).json()) as {
      refused: boolean;
      root_id: string;
    };
    expect(gate).toMatchObject({ refused: false, root_id: tree.root });
    expect(db("SELECT ok, action, root_id FROM mode_directives WHERE session_id = ?", w)).toEqual([
      { ok: 1, action: "recover", root_id: tree.root },
    ]);
    // The worker was stopped (its session refusal is in the log above): its last turn ends in the
    // plugin's abort, or, when its next request raced ahead of the abort under load, in the refusal.
    // The root was aborted before its compaction.
    const wm = (await oc.messages(tree.workers.at(-1) as string)) as Msg[];
    const stoppedBy = wm.filter((m) => m.info.role === "assistant").at(-1)?.info.error?.name;
    expect(["MessageAbortedError", "APIError"]).toContain(stoppedBy);
    const rm = (await oc.messages(tree.root)) as Msg[];
    const lastCompaction = rm.findLastIndex((m) => m.parts.some((p) => p.type === "compaction"));
    expect(rm.slice(0, lastCompaction).some((m) => m.info.error?.name === "MessageAbortedError")).toBe(true);
    // While refused, nothing of the stuck session reached the model but its compaction.
    const stoppedAt = (log[0] as { changed_at: number }).changed_at;
    const liftedAt = (log[1] as { changed_at: number }).changed_at;
    const late = db<{ refused: number; agent: string }>(
      "SELECT refused, agent FROM requests WHERE session_id = ? AND started_at > ? AND started_at < ?",
      w,
      stoppedAt,
      liftedAt,
    );
    expect(late.every((r) => r.refused === 1 || r.agent === "compaction")).toBe(true);
    const detectedAt = (
      db<{ received_at: number }>(
        "SELECT received_at FROM transitions WHERE session_id = ? AND verdict = 'looping'",
        w,
      )[0] as {
        received_at: number;
      }
    ).received_at;
    // What one recovery cost at the gate, from the detection on: the recovery's
    // compaction and continue turn of the root, and any refused worker request.
    const cost = db<{ session_id: string; agent: string; status: number; refused: number }>(
      "SELECT session_id, agent, status, refused FROM requests WHERE session_id IN (?, ?) AND started_at >= ? ORDER BY seq",
      tree.root,
      w,
      detectedAt,
    );
    expect(cost.filter((r) => r.session_id === tree.root && r.agent === "compaction")).toHaveLength(1);
    console.log(
      `auto_recover round ${n}: detection -> continued ${done - detectedAt} ms (polled, upper bound), round ${done - t0} ms, ` +
        `model requests in the round ${model.requests.length - requestsBefore}; gate requests after detection: ` +
        cost.map((r) => `${r.session_id === w ? "worker" : "root"}/${r.agent}/${r.status}`).join(", "),
    );
    return w;
  };

  test("auto_recover stage 1: worker refused and aborted, root aborted, compacted with the report, continues; refusal lifted", async () => {
    await setKnob("progress.mode", "auto_recover");
    const root = await oc.createSession({ title: "orchestrator" });
    tree.root = root.id;
    router.on(root.id, orchestrator);
    const ev = oc.events();
    await ev.ready;
    try {
      await recoverRound(1);
      await ev.waitFor(
        (e) => e.type === "tui.toast.show" && JSON.stringify(e.properties).includes("stallguard recovered"),
        10_000,
      );
    } finally {
      ev.stop();
    }
    expect(treeState()).toMatchObject({ stage: 1, refusedSessions: [], hardStop: false });
    expect(treeState().recoveries).toHaveLength(1);
  }, 150_000);

  test("stage 2 after a router restart: the count survives, the tree is capped, recovered again", async () => {
    srv = await stack.restartRouter();
    expect(treeState().recoveries).toHaveLength(1);
    const w = await recoverRound(2);
    expect(treeState()).toMatchObject({ stage: 2, capContext: true, hardStop: false });
    expect(treeState().recoveries).toHaveLength(2);
    expect(db("SELECT cap FROM context_caps WHERE root_id = ?", tree.root)).toEqual([{ cap: 1000 }]);
    const row = (await (await fetch(`${srv.url}/api/sessions`, { headers: auth })).json()) as {
      sessions: Array<{ session_id: string; stage: string }>;
    };
    expect(row.sessions.find((s) => s.session_id === w)?.stage).toBe("limited");
  }, 150_000);

  test("stage 3: the hard stop refuses the tree and nothing restarts it; Resume lets requests pass", async () => {
    const before = compactionsOf(tree.root).length;
    await startRound(3);
    await expect.poll(() => treeState().hardStop, { timeout: 90_000, interval: 200 }).toBe(true);
    expect(treeState().stage).toBe(3);
    await oc.waitIdle(tree.root, 60_000);
    const gate = (await (await fetch(`${srv.url}/gate/${tree.root}`)).json()) as {
      refused: boolean;
      scope: string;
    };
    expect(gate).toMatchObject({ refused: true, scope: "tree" });
    expect(compactionsOf(tree.root).length).toBe(before); // no recovery at stage 3
    // A new prompt in the stopped tree is refused at the gate: nothing reaches the model.
    const modelBefore = model.requests.length;
    router.on(tree.root, () => ({ kind: "text", text: "after resume", usage: low }));
    await oc.prompt(tree.root, "still there?", { timeoutMs: 30_000 }).catch(() => undefined);
    expect(model.requests.filter((r) => r.sessionId === tree.root).length).toBe(
      model.requests.slice(0, modelBefore).filter((r) => r.sessionId === tree.root).length,
    );
    expect(
      db("SELECT 1 FROM requests WHERE session_id = ? AND refused = 1 AND status = 403", tree.root).length,
    ).toBeGreaterThan(0);

    const res = await fetch(`${srv.url}/api/trees/${tree.root}/resume`, {
      method: "POST",
      headers: auth,
      body: "{}",
    });
    expect(res.status).toBe(200);
    expect(db("SELECT 1 FROM tree_modes WHERE root_id = ?", tree.root)).toEqual([]);
    expect(db("SELECT 1 FROM context_caps WHERE root_id = ?", tree.root)).toEqual([]);
    await oc.prompt(tree.root, "go on", { timeoutMs: 60_000 });
    expect(await lastText(tree.root)).toBe("after resume");
  }, 150_000);

  test("auto_recover on a single looping session: its own refusal is lifted before opencode's continue turn", async () => {
    const s = await oc.createSession({ title: "lonely loop" });
    const low = { prompt_tokens: 500, completion_tokens: 5 };
    router.on(s.id, () =>
      compacted(s.id) ? { kind: "text", text: "alone and done", usage: low } : { ...read(), usage: low },
    );
    await oc.promptAsync(s.id, "read it");
    await expect.poll(() => compacted(s.id), { timeout: 60_000, interval: 200 }).toBe(true);
    await expect.poll(() => lastText(s.id), { timeout: 60_000, interval: 300 }).toBe("alone and done");
    const log = db<{ state: string }>(
      "SELECT state FROM refusal_log WHERE scope = 'session' AND key = ? ORDER BY seq",
      s.id,
    );
    expect(log.map((r) => r.state)).toEqual(["stopped", "running"]);
    // The continue turn was not refused: nothing of this session got a 403 after the compaction.
    const afterCompaction = db<{ status: number }>(
      `SELECT status FROM requests WHERE session_id = ? AND seq > (SELECT MAX(seq) FROM requests WHERE session_id = ? AND agent = 'compaction')`,
      s.id,
      s.id,
    );
    expect(afterCompaction.map((r) => r.status)).toEqual([200]);
    console.log(`auto_recover single session: ${figures(s.id)}`);
  }, 120_000);
});
