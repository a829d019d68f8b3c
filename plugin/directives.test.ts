import { describe, expect, it } from "vitest";
import { directiveResultSchema } from "../shared/index.ts";
import {
  CompactionSignals,
  clientOps,
  DirectiveRunner,
  type ModelRef,
  type OpencodeOps,
  PendingReports,
  runDirective,
} from "./directives.ts";
import { modelFromInput } from "./events.ts";

function fakeOps(opts: { model?: boolean; failSummarize?: boolean } = {}) {
  const calls: string[] = [];
  let compactedContext: string[] = [];
  const pending = new PendingReports();
  const ops: OpencodeOps = {
    abort: async (id) => {
      calls.push(`abort ${id}`);
    },
    summarize: async (id, m) => {
      calls.push(`summarize ${id} ${m.providerID}/${m.modelID}`);
      if (opts.failSummarize) throw new Error("boom");
      const out = { context: [] as string[] };
      pending.onCompacting(id, out);
      compactedContext = out.context;
    },
    modelOf: async () => (opts.model === false ? null : { providerID: "p", modelID: "m" }),
    toast: async (msg) => {
      calls.push(`toast ${msg}`);
    },
  };
  return { ops, calls, pending, context: () => compactedContext };
}

const directive = (action: "compact" | "recover") => ({
  id: "d:1234",
  action,
  session_id: "child",
  root_id: "root",
  report: "[stallguard] A sub-agent is looping.\nAvoid: re-reading.",
});

describe("directives", () => {
  it("recover aborts the stuck session and the root, then compacts the root with the report", async () => {
    const f = fakeOps();
    const r = await runDirective(directive("recover"), f.ops, f.pending, () => 5);
    expect(f.calls).toEqual([
      "abort child",
      "abort root",
      "summarize root p/m",
      "toast stallguard recovered: root",
    ]);
    expect(f.context().join("\n")).toContain("Avoid: re-reading.");
    expect(r).toEqual({
      type: "directive_result",
      directive_id: "d:1234",
      session_id: "child",
      root_id: "root",
      ok: true,
      error: null,
      at: 5,
    });
    expect(directiveResultSchema.safeParse(r).success).toBe(true);
  });

  it("compact summarizes only the stuck session and aborts nothing", async () => {
    const f = fakeOps();
    await runDirective(directive("compact"), f.ops, f.pending);
    expect(f.calls[0]).toBe("summarize child p/m");
    expect(f.calls.some((c) => c.startsWith("abort"))).toBe(false);
  });

  it("reports failures instead of throwing", async () => {
    const noModel = fakeOps({ model: false });
    expect((await runDirective(directive("recover"), noModel.ops, noModel.pending)).error).toBe(
      "no_model_for_session",
    );
    const bad = fakeOps({ failSummarize: true });
    const r = await runDirective(directive("recover"), bad.ops, bad.pending);
    expect(r.ok).toBe(false);
    expect(r.error).toBe("summarize_failed");
  });

  it("a report is appended to one compaction only, and the store is bounded", () => {
    const p = new PendingReports(2);
    p.set("a", "A");
    p.set("b", "B");
    p.set("c", "C");
    expect(p.has("a")).toBe(false);
    const out = { context: [] as string[] };
    p.onCompacting("c", out);
    p.onCompacting("c", out);
    expect(out.context).toHaveLength(1);
  });
});

describe("DirectiveRunner", () => {
  /** Ops whose summarize never returns (opencode's auto: true loop keeps going), like the real one. */
  function hangingOps() {
    const calls: string[] = [];
    const ops: OpencodeOps = {
      abort: async (id) => {
        calls.push(`abort ${id}`);
      },
      summarize: (id) => {
        calls.push(`summarize ${id}`);
        return new Promise<void>(() => {});
      },
      modelOf: async () => ({ providerID: "p", modelID: "m" }),
      toast: async (m) => {
        calls.push(`toast ${m}`);
      },
    };
    return { ops, calls };
  }

  it("runs a re-sent directive once; completes on the compaction signal; the autocontinue waits for the result", async () => {
    const { ops, calls } = hangingOps();
    const sent: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const runner = new DirectiveRunner(ops, async (r) => {
      await gate;
      sent.push(`${r.directive_id} ${r.ok}`);
    });
    runner.handle([directive("recover")]);
    runner.handle([directive("recover")]);
    await expect.poll(() => calls).toEqual(["abort child", "abort root", "summarize root"]);

    const out = { context: [] as string[] };
    runner.onCompacting("root", out);
    expect(out.context[0]).toContain("Avoid: re-reading.");

    let continued = false;
    const hook = runner.onCompacted("root", 5000).then(() => {
      continued = true;
    });
    // One turn of the event loop: whatever could run without the result has run.
    await new Promise((r) => setImmediate(r));
    expect(continued).toBe(false); // still waiting for the result to reach the router
    release();
    await hook;
    expect(sent).toEqual(["d:1234 true"]);
    expect(calls.at(-1)).toBe("toast stallguard recovered: root");
    await runner.idle();
  });

  it("a compaction that never comes ends in a failed result", async () => {
    const { ops } = hangingOps();
    const results: string[] = [];
    const runner = new DirectiveRunner(
      ops,
      async (r) => {
        results.push(String(r.error));
      },
      { timeoutMs: 30 },
    );
    runner.handle([directive("compact")]);
    await runner.idle();
    expect(results).toEqual(["compaction_timeout"]);
    expect(await new CompactionSignals().fire("nobody")).toBe(false);
  });
});

describe("clientOps and modelFromInput", () => {
  it("calls the SDK with auto: true and turns error answers into failures", async () => {
    const seen: unknown[] = [];
    const models = new Map<string, ModelRef>();
    const ops = clientOps(
      {
        session: {
          abort: async (o) => {
            seen.push(["abort", o]);
            return { error: { name: "NotFound" } };
          },
          summarize: async (o) => {
            seen.push(["summarize", o]);
            return { data: true };
          },
          messages: async () => ({
            data: [
              { info: { role: "user" } },
              { info: { role: "assistant", providerID: "fake", modelID: "loop" } },
            ],
          }),
        },
      },
      models,
    );
    await expect(ops.abort("s")).rejects.toThrow("abort_failed");
    await ops.summarize("s", { providerID: "fake", modelID: "loop" });
    expect(seen[1]).toEqual([
      "summarize",
      { path: { id: "s" }, body: { providerID: "fake", modelID: "loop", auto: true } },
    ]);
    expect(await ops.modelOf("s")).toEqual({ providerID: "fake", modelID: "loop" });
    models.set("s", { providerID: "a", modelID: "b" });
    expect(await ops.modelOf("s")).toEqual({ providerID: "a", modelID: "b" });
    await expect(clientOps({}, models).summarize("s", { providerID: "a", modelID: "b" })).rejects.toThrow();
  });

  it("reads the model from chat.headers inputs", () => {
    expect(modelFromInput({ message: { model: { providerID: "fake", modelID: "loop" } } })).toEqual({
      providerID: "fake",
      modelID: "loop",
    });
    expect(modelFromInput({ model: { id: "loop", providerID: "fake" } })).toEqual({
      providerID: "fake",
      modelID: "loop",
    });
    expect(modelFromInput({ model: 5 })).toBeNull();
    expect(modelFromInput(null)).toBeNull();
  });
});
