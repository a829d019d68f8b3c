// Where the work-tree probe meets the tool hooks: which calls it watches (a
// bash call that may write, the edit tools that change files themselves) and
// the answer a bash call's observation waits for. Without a probe every
// method is a no-op and bash writes are judged from the command alone.
import { changesFiles } from "../shared/index.ts";
import type { BashCommand, ToolStarting } from "./events.ts";
import type { TreeAnswer, WorktreeProbe } from "./worktree-probe.ts";

/** What the plugin asks of the work-tree probe (worktree-probe.ts). */
export type ProbeLike = Pick<WorktreeProbe, "refresh" | "started" | "ended" | "before" | "after" | "close">;

export class ProbeHooks {
  constructor(
    private readonly probe: ProbeLike | null,
    private readonly onError: (err: unknown) => void,
  ) {}

  refresh(): void {
    this.probe?.refresh();
  }

  close(): void {
    this.probe?.close();
  }

  /**
   * tool.execute.before. True when the probe took the call (a bash call: its
   * fingerprint is taken before it runs); false when the caller's own
   * before-write hashing still applies.
   */
  async before(call: ToolStarting): Promise<boolean> {
    if (!this.probe) return false;
    const { sessionId, callId, bash } = call;
    if (bash) {
      await this.probe.before(sessionId, callId, bash.command, bash.workdir);
      return true;
    }
    if (changesFiles(call.tool)) this.probe.started(sessionId, callId);
    return false;
  }

  /** An edit tool finished: the probe's baseline is retaken (the change is the tool's, not bash's). */
  afterTool(sessionId: string, callId: string, tool: string): void {
    if (!this.probe || !changesFiles(tool)) return;
    this.probe.ended(sessionId, callId);
    this.probe.refresh();
  }

  /** A tool that threw (no after hook) ended. */
  ended(sessionId: string, callId: string): void {
    this.probe?.ended(sessionId, callId);
  }

  /** The probe's pending answer for a bash call that may write; null when there is none to wait for. */
  after(sessionId: string, callId: string, bash: BashCommand | null): Promise<TreeAnswer | null> | null {
    if (!this.probe || !bash) return null;
    try {
      return this.probe.after(sessionId, callId, bash.command, bash.workdir);
    } catch (err) {
      this.onError(err);
      return null;
    }
  }
}
