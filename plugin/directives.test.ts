import { describe, expect, it } from "vitest";
import { directiveResultSchema } from "../shared/wire.ts";
import { type OpencodeOps, PendingReports, runDirective } from "./directives.ts";

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

  it("compact summarizes only the stuck session", async () => {
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
