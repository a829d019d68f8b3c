// Whether a finished call landed: the load-bearing definition (spec section 2),
// per session, with the memory it needs to tell a repeat or an undo from new
// progress. Bounded: every map is capped.
import { BoundedMap } from "./bounded-map.ts";
import { writeChange } from "./change.ts";
import type { ToolCall, WorktreeAnswer } from "./types.ts";

export interface Landing {
  landed: boolean;
  /** A change that only repeated or undid one that already landed (or a return to an earlier tree). */
  reverted: boolean;
}

const NO: Landing = { landed: false, reverted: false };
const LANDED: Landing = { landed: true, reverted: false };
const REVERTED: Landing = { landed: false, reverted: true };
const ABSENT = "absent";

/** One session's landing decisions and the memory they need to tell a repeat or an undo. */
export class LandingMemory {
  /** Changes that landed (forward fingerprint), remembered across stretches to tell a revert. */
  private readonly landedChanges = new BoundedMap<string, true>(512);
  /** Work-tree states this session has seen, to tell a return to an earlier state. */
  private readonly treeStates = new BoundedMap<string, true>(512);
  private readonly testFailed = new BoundedMap<string, boolean>(256);
  private readonly writeContent = new BoundedMap<string, string>(256);
  /** Per command (fingerprint), the paths its last run changed in the project. */
  private readonly runChanges = new BoundedMap<string, readonly string[]>(256);

  decide(call: ToolCall): Landing {
    if (call.effect === "test") {
      // A fix landed only when a test passes after the same call last failed.
      const failedBefore = this.testFailed.get(call.fp) === true;
      this.testFailed.set(call.fp, call.failed);
      if (!call.failed && failedBefore) return LANDED;
    }
    if (call.worktree) return this.decideTree(call, call.worktree);
    if (call.failed) return NO;
    if (call.effect === "commit") return LANDED;
    // An edit, a write, or a bash command that edits by its text (also beside a test run).
    if (!call.change && !call.write) return NO;
    let change = call.change;
    if (call.write) {
      const w = call.write;
      const prior =
        w.prior !== undefined
          ? (w.prior ?? ABSENT)
          : (this.writeContent.get(w.path) ?? (w.existed === false ? ABSENT : undefined));
      this.writeContent.set(w.path, w.content);
      if (prior === w.content) return NO;
      change = writeChange(w.path, prior ?? "unknown", w.content);
    }
    if (!change) return NO;
    // A change that repeats or undoes one already landed is no net progress.
    if (this.landedChanges.has(change.fwd) || this.landedChanges.has(change.rev)) return REVERTED;
    this.landedChanges.set(change.fwd, true);
    return LANDED;
  }

  /**
   * The live probe's answer for a bash call: the project changed and is in a
   * state this session has not seen before. Coming back to an earlier state
   * (an edit undone, a file deleted again) is a revert, not progress; so is a
   * rerun that only rewrote the files the same command changed last time (a
   * script's output with new timings), as replay judges the same command.
   */
  private decideTree(call: ToolCall, tree: WorktreeAnswer): Landing {
    this.treeStates.set(tree.before, true);
    if (tree.after === tree.before) return NO;
    const changed = tree.changed ?? [];
    if (changed.length > 0 && !changed.includes("HEAD")) {
      const last = this.runChanges.get(call.fp);
      this.runChanges.set(call.fp, changed);
      if (last && changed.every((p) => last.includes(p))) return call.change ? REVERTED : NO;
    }
    if (this.treeStates.has(tree.after)) return REVERTED;
    this.treeStates.set(tree.after, true);
    return LANDED;
  }
}
