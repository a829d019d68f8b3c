// Runs the router's mode directives inside opencode (spec section 5):
// compact = summarize the stuck session; recover = abort the stuck session and
// its root, then summarize the root. The incident report rides into the
// compaction prompt through experimental.session.compacting, so it survives
// into the compacted context. Plain functions over a small ops interface so
// the hook shell stays thin and this is testable without opencode.
import type { Directive, DirectiveResult } from "../shared/wire.ts";

export interface ModelRef {
  providerID: string;
  modelID: string;
}

export interface OpencodeOps {
  abort(sessionId: string): Promise<void>;
  /** POST /session/{id}/summarize {providerID, modelID, auto: true}: resolves when the compaction is done. */
  summarize(sessionId: string, model: ModelRef): Promise<void>;
  /** The model the session last used (from chat.params / chat.message, or its messages). */
  modelOf(sessionId: string): Promise<ModelRef | null>;
  toast(message: string, variant: "info" | "warning" | "success" | "error"): Promise<void>;
}

/** Reports waiting for a session's next compaction; bounded so a lost compaction cannot leak. */
export class PendingReports {
  private readonly map = new Map<string, string>();
  constructor(private readonly max = 64) {}

  set(sessionId: string, report: string): void {
    this.map.delete(sessionId);
    this.map.set(sessionId, report);
    while (this.map.size > this.max) {
      const oldest = this.map.keys().next();
      if (oldest.done) break;
      this.map.delete(oldest.value);
    }
  }

  /** experimental.session.compacting: append the report once, then forget it. */
  onCompacting(sessionId: string, output: { context: string[] }): void {
    const report = this.map.get(sessionId);
    if (report === undefined) return;
    this.map.delete(sessionId);
    output.context.push(
      `A stall detector (stallguard) stopped this work. Keep this incident report in the summary and follow its advice:\n${report}`,
    );
  }

  has(sessionId: string): boolean {
    return this.map.has(sessionId);
  }
}

function result(d: Directive, ok: boolean, error: string | null, now: number): DirectiveResult {
  return {
    type: "directive_result",
    directive_id: d.id,
    session_id: d.session_id,
    root_id: d.root_id,
    ok,
    error,
    at: now,
  };
}

/** Runs one directive; never throws. */
export async function runDirective(
  d: Directive,
  ops: OpencodeOps,
  pending: PendingReports,
  now: () => number = Date.now,
): Promise<DirectiveResult> {
  const target = d.action === "recover" ? d.root_id : d.session_id;
  try {
    if (d.action === "recover") {
      await ops.abort(d.session_id).catch(() => undefined);
      if (d.root_id !== d.session_id) await ops.abort(d.root_id).catch(() => undefined);
    }
    const model = await ops.modelOf(target);
    if (!model) return result(d, false, "no_model_for_session", now());
    pending.set(target, d.report);
    try {
      await ops.summarize(target, model);
    } catch {
      return result(d, false, "summarize_failed", now());
    }
    await ops
      .toast(
        d.action === "recover" ? `stallguard recovered: ${target}` : `stallguard compacted: ${target}`,
        "success",
      )
      .catch(() => undefined);
    return result(d, true, null, now());
  } catch {
    return result(d, false, "directive_failed", now());
  }
}
