// Test fixture: one opencode session fed through the forest the plugin and
// the calibrator share, with the shipped defaults: real ToolCalls built by
// toToolCall from hook-shaped input, a turn before each call, and the verdict
// after each call recorded.
import { configSchema } from "./config.ts";
import { SessionForest } from "./forest.ts";
import { policyFromConfig } from "./policy.ts";
import { toToolCall } from "./tool-call.ts";
import type { Observation, Verdict } from "./types.ts";

export const DIR = "/home/dev/repo";
export const policy = policyFromConfig(configSchema.parse({}));

export class Session {
  readonly forest = new SessionForest(policy);
  readonly verdicts: Verdict[] = [];
  private clock = 0;
  private n = 0;
  constructor(
    readonly id = "s",
    readonly parent: string | null = null,
    forest?: SessionForest,
    readonly agent = "build",
  ) {
    if (forest) this.forest = forest;
  }
  private observe(obs: Observation): void {
    this.forest.observe(obs);
  }
  call(
    tool: string,
    args: Record<string, unknown>,
    output: string,
    opts: { exit?: number; status?: "completed" | "error"; meta?: Record<string, unknown> } = {},
  ) {
    this.clock += 1000;
    this.observe({
      kind: "turn",
      sessionId: this.id,
      parentId: this.parent,
      agent: this.agent,
      time: this.clock,
    });
    const metadata = { ...(opts.exit === undefined ? {} : { exit: opts.exit }), ...(opts.meta ?? {}) };
    const call = toToolCall(
      { tool, callId: `c${++this.n}`, args, metadata, status: opts.status ?? "completed", output },
      {
        sessionId: this.id,
        parentId: this.parent,
        agent: this.agent,
        time: this.clock,
        directory: DIR,
        testPatterns: policy.testPatterns,
      },
    );
    const { event } = this.forest.observe({ kind: "tool", call });
    this.verdicts.push(this.verdict);
    return event;
  }
  bash(command: string, exit: number, output: string) {
    return this.call("bash", { command }, output, { exit });
  }
  read(file: string, output: string) {
    return this.call("read", { filePath: `${DIR}/${file}` }, output);
  }
  edit(file: string, a: string, b: string) {
    return this.call(
      "edit",
      { filePath: `${DIR}/${file}`, oldString: a, newString: b },
      "Edit applied successfully.",
      {
        meta: { diff: `--- ${file}\n+++ ${file}\n-${a}\n+${b}\n` },
      },
    );
  }
  user(text: string, injected = false) {
    this.clock += 1000;
    this.observe({
      kind: "user",
      sessionId: this.id,
      parentId: this.parent,
      agent: this.agent,
      time: this.clock,
      injected,
      textHash: text,
    });
  }
  get verdict(): Verdict {
    return this.forest.get(this.id)?.lastVerdict.verdict ?? "ok";
  }
  get flagged(): boolean {
    return this.verdicts.some((v) => v !== "ok");
  }
  get firstFlag(): number | null {
    const i = this.verdicts.findIndex((v) => v !== "ok");
    return i < 0 ? null : i + 1;
  }
}
