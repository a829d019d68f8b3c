import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  fromToolPart,
  parseConfig,
  policyFromConfig,
  SessionForest,
  type ToolEvent,
} from "../../shared/index.ts";
import { buildDigest, DIGEST_MAX_CALLS, digestCall } from "./digest.ts";
import { askSecondOpinion, parseOpinion } from "./ollama.ts";

const SECRET = "TOP-SECRET-CONTENT";

function config() {
  const r = parseConfig([]);
  if (!r.ok) throw new Error("defaults must parse");
  return r.config;
}

/** Real ToolEvents from the core, built from stored tool parts that carry content. */
function events(): { events: ToolEvent[]; forest: SessionForest } {
  const policy = policyFromConfig(config());
  const forest = new SessionForest(policy);
  const parts = [
    ...Array.from({ length: 12 }, (_, i) => ({
      type: "tool",
      tool: "read",
      callID: `c${i}`,
      state: {
        status: "completed",
        input: { filePath: "/proj/src/navbar.js" },
        output: `${SECRET} file body`,
        metadata: { preview: SECRET },
        time: { start: 1000 + i, end: 1001 + i },
      },
    })),
    {
      type: "tool",
      tool: "bash",
      callID: "b1",
      state: {
        status: "completed",
        input: { command: `npm test -- --grep '${SECRET}'` },
        output: SECRET,
        metadata: { exit: 1, output: SECRET },
        time: { start: 2000, end: 2001 },
      },
    },
  ];
  const out: ToolEvent[] = [];
  for (const p of parts) {
    const call = fromToolPart(p, {
      sessionId: "ses_d",
      parentId: null,
      agent: "build",
      directory: "/proj",
      testPatterns: policy.testPatterns,
    });
    if (!call) throw new Error("expected a call");
    const { event } = forest.observe({ kind: "tool", call });
    if (event) out.push(event);
  }
  return { events: out, forest };
}

describe("digest", () => {
  test("tool names, targets and exit codes only; never content", () => {
    const { events: evs, forest } = events();
    const signals = forest.get("ses_d")?.signals();
    if (!signals) throw new Error("tracker missing");
    const d = buildDigest({
      agent: "build",
      verdict: "stalling",
      reason: "repeat_target",
      signals,
      calls: evs.map(digestCall),
    });
    expect(d).toContain("agent: build");
    expect(d).toContain("deterministic verdict: stalling (repeat_target)");
    expect(d).toContain("read src/navbar.js");
    expect(d).toMatch(/13\. bash .*exit=1/);
    expect(d).toContain("most repeated: read src/navbar.js x12");
    expect(d).not.toContain(SECRET);
    expect(d).not.toContain("/proj/");
    // eslint-style guard: printable ASCII only.
    expect(/^[\x20-\x7e\n]*$/.test(d)).toBe(true);
  });

  test("keeps the last DIGEST_MAX_CALLS calls with their original numbers", () => {
    const { forest } = events();
    const signals = forest.get("ses_d")?.signals();
    if (!signals) throw new Error("tracker missing");
    const calls = Array.from({ length: 100 }, (_, i) => ({
      tool: "grep",
      target: `t${i}`,
      exit: null,
      failed: false,
      landed: i === 99,
    }));
    const d = buildDigest({ agent: "x", verdict: "looping", reason: null, signals, calls });
    expect(d).toContain(`last ${DIGEST_MAX_CALLS} calls`);
    expect(d).not.toContain("1. grep t0\n");
    expect(d).toContain("61. grep t60");
    expect(d).toContain("100. grep t99 LANDED");
  });
});

describe("second opinion answer parsing", () => {
  test.each([
    ["yes: it re-reads navbar.js", true, "it re-reads navbar.js"],
    ["No - it is editing different files", false, "it is editing different files"],
    ["**YES.** same failing test", true, "same failing test"],
    ["<think>hmm</think>\nno, progress is visible", false, "progress is visible"],
    ["  \n yes", true, ""],
  ])("%j", (text, stuck, reason) => {
    expect(parseOpinion(text)).toEqual({ stuck, reason });
  });

  test("anything else is no answer", () => {
    expect(parseOpinion("Maybe. Hard to say.")).toBeNull();
    expect(parseOpinion("yesterday it was fine")).toBeNull();
    expect(parseOpinion("")).toBeNull();
  });
});

describe("askSecondOpinion against local HTTP servers", () => {
  let srv: Server;
  let base = "";
  let mode: "yes" | "hang" | "500" | "garbage" = "yes";
  const bodies: unknown[] = [];
  beforeAll(async () => {
    srv = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => {
        raw += c.toString("utf8");
      });
      req.on("end", () => {
        bodies.push(JSON.parse(raw));
        if (mode === "hang") return; // never answers
        if (mode === "500") return void res.writeHead(500).end("boom");
        if (mode === "garbage") return void res.writeHead(200).end("<html>");
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(
            JSON.stringify({ message: { role: "assistant", content: "Yes: loops on one read" }, done: true }),
          );
      });
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    srv.closeAllConnections();
    await new Promise<void>((r) => srv.close(() => r()));
  });

  test("asks /api/chat non-streaming with the model and the question", async () => {
    mode = "yes";
    const op = await askSecondOpinion({
      baseUrl: `${base}/`,
      model: "qwen:1b",
      digest: "DIGEST",
      timeoutMs: 2000,
    });
    expect(op).toEqual({ model: "qwen:1b", stuck: true, reason: "loops on one read" });
    const body = bodies.at(-1) as { model: string; stream: boolean; messages: Array<{ content: string }> };
    expect(body.model).toBe("qwen:1b");
    expect(body.stream).toBe(false);
    expect(body.messages.at(-1)?.content).toContain("DIGEST");
    expect(body.messages.at(-1)?.content).toContain("yes or no");
  });

  test("a slow, failing or odd model degrades to null", async () => {
    for (const m of ["hang", "500", "garbage"] as const) {
      mode = m;
      expect(await askSecondOpinion({ baseUrl: base, model: "q", digest: "d", timeoutMs: 300 })).toBeNull();
    }
    expect(
      await askSecondOpinion({ baseUrl: "http://127.0.0.1:1", model: "q", digest: "d", timeoutMs: 300 }),
    ).toBeNull();
  });
});
