// Runs the router's mode directives inside opencode (spec section 5):
// compact = summarize the stuck session; recover = abort the stuck
// session and its root, then summarize the root. The incident report rides
// into the compaction prompt through experimental.session.compacting, so it
// survives into the compacted context. Plain functions over a small ops
// interface so the hook shell stays thin and this is testable without opencode.
//
// `summarize` with auto: true returns only when opencode's loop after the
// compaction ends, so completion is taken from the compaction itself: the
// experimental.compaction.autocontinue hook (awaited by opencode before its
// continue turn, so the router can lift the refusal first) or the
// session.compacted event, whichever comes first.

import { BoundedMap, type Directive, type DirectiveResult, obj, text } from "../shared/index.ts";

export interface ModelRef {
  providerID: string;
  modelID: string;
}

export interface OpencodeOps {
  abort(sessionId: string): Promise<void>;
  /** POST /session/{id}/summarize {providerID, modelID, auto: true}. */
  summarize(sessionId: string, model: ModelRef): Promise<void>;
  /** The model the session last used (from chat.headers, or its messages). */
  modelOf(sessionId: string): Promise<ModelRef | null>;
  toast(message: string, variant: "info" | "warning" | "success" | "error"): Promise<void>;
}

/** Reports waiting for a session's next compaction; bounded so a lost compaction cannot leak. */
export class PendingReports {
  private readonly map: BoundedMap<string, string>;
  constructor(max = 64) {
    this.map = new BoundedMap(max);
  }

  set(sessionId: string, report: string): void {
    this.map.set(sessionId, report);
  }

  /** experimental.session.compacting: append the report once, then forget it. */
  onCompacting(sessionId: string, output: { context: string[] }): void {
    const report = this.map.get(sessionId);
    if (report === undefined) return;
    this.map.delete(sessionId);
    if (!Array.isArray(output.context)) return;
    output.context.push(
      `A stall detector (stallguard) stopped this work. Keep this incident report in the summary and follow its advice:\n${report}`,
    );
  }

  has(sessionId: string): boolean {
    return this.map.has(sessionId);
  }
}

/** One-shot signals "this session's compaction finished", keyed by session id. */
export class CompactionSignals {
  private readonly waiters = new Map<string, Array<() => void>>();

  /** Resolves on the next fire(sessionId), or rejects after timeoutMs. */
  wait(sessionId: string, timeoutMs: number): { promise: Promise<void>; cancel(): void } {
    let resolveFn: () => void = () => {};
    let timer: ReturnType<typeof setTimeout> | undefined;
    const promise = new Promise<void>((resolve, reject) => {
      resolveFn = () => {
        clearTimeout(timer);
        resolve();
      };
      timer = setTimeout(() => {
        this.remove(sessionId, resolveFn);
        reject(new Error("compaction_timeout"));
      }, timeoutMs);
      (timer as { unref?: () => void }).unref?.();
    });
    const list = this.waiters.get(sessionId) ?? [];
    list.push(resolveFn);
    this.waiters.set(sessionId, list);
    return {
      promise,
      cancel: () => {
        clearTimeout(timer);
        this.remove(sessionId, resolveFn);
      },
    };
  }

  fire(sessionId: string): boolean {
    const list = this.waiters.get(sessionId);
    if (!list || list.length === 0) return false;
    this.waiters.delete(sessionId);
    for (const f of list) f();
    return true;
  }

  private remove(sessionId: string, f: () => void): void {
    const list = this.waiters.get(sessionId)?.filter((x) => x !== f) ?? [];
    if (list.length === 0) this.waiters.delete(sessionId);
    else this.waiters.set(sessionId, list);
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
    at: Math.floor(now),
  };
}

export interface RunOptions {
  now?: () => number;
  /** Compaction-finished signals; without them the summarize call's own return counts. */
  signals?: CompactionSignals;
  /** Longest wait for the compaction. */
  timeoutMs?: number;
}

/** Runs one directive; never throws. */
export async function runDirective(
  d: Directive,
  ops: OpencodeOps,
  pending: PendingReports,
  opts: RunOptions | (() => number) = {},
): Promise<DirectiveResult> {
  const o: RunOptions = typeof opts === "function" ? { now: opts } : opts;
  const now = o.now ?? Date.now;
  const target = d.action === "recover" ? d.root_id : d.session_id;
  try {
    // A recovery stops the spending first: the stuck session and its root. A
    // compaction stops nothing: opencode (1.18.33, measured) takes a summarize
    // on a busy session into its running loop and continues after it.
    if (d.action === "recover") {
      await ops.abort(d.session_id).catch(() => undefined);
      if (d.root_id !== d.session_id) await ops.abort(d.root_id).catch(() => undefined);
    }
    const model = await ops.modelOf(target).catch(() => null);
    if (!model) return result(d, false, "no_model_for_session", now());
    pending.set(target, d.report);
    const waiter = o.signals?.wait(target, o.timeoutMs ?? 180_000);
    const summarized = ops.summarize(target, model).then(
      () => "returned" as const,
      () => "failed" as const,
    );
    const compacted = waiter
      ? waiter.promise.then(
          () => "compacted" as const,
          () => "timeout" as const,
        )
      : new Promise<never>(() => {});
    const first = await Promise.race([summarized, compacted]);
    waiter?.cancel();
    if (first === "failed") return result(d, false, "summarize_failed", now());
    if (first === "timeout") return result(d, false, "compaction_timeout", now());
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

/**
 * Receives directives from /progress answers (fresh and re-sent ones), runs
 * each id once, and hands the result to `send`. Never throws, never blocks
 * the caller.
 */
export class DirectiveRunner {
  readonly pending = new PendingReports();
  readonly signals = new CompactionSignals();
  private readonly seen = new BoundedMap<string, true>(512);
  private readonly running = new Map<string, Promise<DirectiveResult>>();
  /** The result waiting to be delivered, per compacted session (the autocontinue hook awaits it). */
  private readonly delivering = new Map<string, Promise<void>>();
  readonly results: DirectiveResult[] = [];

  constructor(
    private readonly ops: OpencodeOps,
    private readonly send: (r: DirectiveResult) => Promise<void>,
    private readonly opts: {
      now?: () => number;
      timeoutMs?: number;
      log?: (code: string, msg: string) => void;
    } = {},
  ) {}

  handle(directives: readonly Directive[]): void {
    for (const d of directives) {
      if (this.seen.has(d.id)) continue;
      this.seen.set(d.id, true);
      const target = d.action === "recover" ? d.root_id : d.session_id;
      if (this.running.has(target)) continue; // one recovery per target at a time
      const run = runDirective(d, this.ops, this.pending, {
        signals: this.signals,
        ...(this.opts.now ? { now: this.opts.now } : {}),
        ...(this.opts.timeoutMs ? { timeoutMs: this.opts.timeoutMs } : {}),
      });
      this.running.set(target, run);
      const delivered = run
        .then(async (r) => {
          this.results.push(r);
          if (this.results.length > 50) this.results.shift();
          if (!r.ok) this.opts.log?.("directive_failed", `${d.action} ${r.error ?? ""}`);
          await this.send(r);
        })
        .catch((err: unknown) => this.opts.log?.("directive_failed", String(err)))
        .finally(() => {
          this.running.delete(target);
          this.delivering.delete(target);
        });
      this.delivering.set(target, delivered);
    }
  }

  /** experimental.session.compacting. */
  onCompacting(sessionId: string, output: { context: string[] }): void {
    this.pending.onCompacting(sessionId, output);
  }

  /**
   * The session's compaction finished (autocontinue hook or session.compacted
   * event). Resolves when the result has been handed to the router, bounded by
   * waitMs, so opencode's continue turn comes after the refusal is lifted.
   */
  async onCompacted(sessionId: string, waitMs = 2000): Promise<void> {
    if (!this.signals.fire(sessionId)) return;
    const delivered = this.delivering.get(sessionId);
    if (!delivered) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      delivered,
      new Promise<void>((r) => {
        timer = setTimeout(r, waitMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Resolves when every running directive is done (tests). */
  async idle(): Promise<void> {
    await Promise.all([...this.delivering.values()]);
  }
}

/** The opencode SDK client surface the ops use (all optional: a missing one fails the directive). */
export interface OpsClient {
  session?: {
    abort?: (o: { path: { id: string } }) => Promise<unknown>;
    summarize?: (o: { path: { id: string }; body: ModelRef & { auto: boolean } }) => Promise<unknown>;
    messages?: (o: { path: { id: string } }) => Promise<unknown>;
  };
  tui?: {
    showToast?: (o: {
      body: { title?: string; message: string; variant: string; duration?: number };
    }) => Promise<unknown>;
  };
}

function failed(res: unknown): boolean {
  const r = obj(res);
  return r.error !== undefined && r.error !== null;
}

/** OpencodeOps over the SDK client opencode hands the plugin. */
/** The models sessions last used, as chat.headers saw them. */
export type KnownModels = { get(sessionId: string): ModelRef | undefined };

export function clientOps(client: OpsClient, models: KnownModels): OpencodeOps {
  return {
    async abort(id) {
      const res = await client.session?.abort?.call(client.session, { path: { id } });
      if (failed(res)) throw new Error("abort_failed");
    },
    async summarize(id, model) {
      const fn = client.session?.summarize;
      if (!fn) throw new Error("no_summarize");
      const res = await fn.call(client.session, { path: { id }, body: { ...model, auto: true } });
      if (failed(res)) throw new Error("summarize_failed");
    },
    async modelOf(id) {
      const known = models.get(id);
      if (known) return known;
      const res = await client.session?.messages?.call(client.session, { path: { id } });
      const list = obj(res).data;
      if (!Array.isArray(list)) return null;
      for (let i = list.length - 1; i >= 0; i--) {
        const info = obj(obj(list[i]).info);
        const providerID = text(info.providerID) ?? text(obj(info.model).providerID);
        const modelID = text(info.modelID) ?? text(obj(info.model).modelID);
        if (providerID && modelID) return { providerID, modelID };
      }
      return null;
    },
    async toast(message, variant) {
      await client.tui?.showToast?.call(client.tui, {
        body: { title: "stallguard", message: message.slice(0, 300), variant, duration: 8000 },
      });
    },
  };
}
