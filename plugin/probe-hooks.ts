// Where the work-tree probe meets the tool hooks: which calls it watches (a
// bash call that may write, the edit tools that change files themselves) and
// the answer a bash call's observation waits for. Without a probe every
// method is a no-op and bash writes are judged from the command alone.
import { changesFiles, obj, text, toolKind } from "../shared/index.ts";
import type { TreeAnswer, WorktreeProbe } from "./worktree-probe.ts";

/** What the plugin asks of the work-tree probe (worktree-probe.ts). */
export type ProbeLike = Pick<WorktreeProbe, "refresh" | "started" | "ended" | "before" | "after" | "close">;

/** A bash call's ids and command, from tool.execute.before/after shapes; null for other tools. */
export function bashCommandOf(
  input: unknown,
  args: unknown,
): { sessionId: string; callId: string; command: string } | null {
  const i = obj(input);
  if (toolKind(text(i.tool) ?? "") !== "bash") return null;
  const sessionId = text(i.sessionID);
  const callId = text(i.callID);
  const command = text(obj(args).command);
  return sessionId && callId && command ? { sessionId, callId, command } : null;
}

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
  async before(input: unknown, args: unknown): Promise<boolean> {
    if (!this.probe) return false;
    const bash = bashCommandOf(input, args);
    if (bash) {
      await this.probe.before(bash.sessionId, bash.callId, bash.command, text(obj(args).workdir));
      return true;
    }
    const i = obj(input);
    const [sessionId, callId] = [text(i.sessionID), text(i.callID)];
    if (sessionId && callId && changesFiles(text(i.tool) ?? "")) this.probe.started(sessionId, callId);
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
  after(input: unknown, args: unknown): Promise<TreeAnswer | null> | null {
    if (!this.probe) return null;
    const bash = bashCommandOf(input, args);
    if (!bash) return null;
    try {
      return this.probe.after(bash.sessionId, bash.callId, bash.command, text(obj(args).workdir));
    } catch (err) {
      this.onError(err);
      return null;
    }
  }
}
