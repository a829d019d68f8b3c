// Turns one finished tool call (tool name, arguments, metadata, status) into a
// ToolCall: hashes, a coarse target and booleans. The arguments and output are
// read here and dropped; nothing of them is kept but hashes.

import { type BashFacts, type BashMemo, bashFacts, commits, runsTests, textEdit } from "./bash-call.ts";
import { canonicalJson } from "./canonical-json.ts";
import { diffChange, editChange } from "./change.ts";
import { coarsePath } from "./coarse-path.ts";
import { sha256, shortHash } from "./hash.ts";
import { outcomeHash } from "./outcome.ts";
import { slugAgent } from "./policy.ts";
import { num, obj, type Rec, str } from "./read.ts";
import { type ToolKind, toolKind } from "./tool-kinds.ts";
import type { Effect, ToolCall, WorktreeAnswer } from "./types.ts";

export interface CallContext {
  sessionId: string;
  parentId: string | null;
  agent: string;
  time: number;
  /** The session's working directory, so targets are relative to it. */
  directory?: string | null;
  testPatterns: readonly RegExp[];
  /** For write: the content hash of the file before the call, when the sensor read it (null: absent). */
  writePrior?: string | null;
  /** For bash: what the live sensor's work-tree probe says the call changed, when it probed. */
  worktree?: WorktreeAnswer | null;
  /** For bash: the session's commands read so far (shared/bash-call.ts), when the caller keeps them. */
  bashMemo?: BashMemo | null;
}

/**
 * A call context with its session id and time set. Spelled out, not
 * `{ ...ctx }`: this runs per tool call and the spread took V8's slow copy
 * path (most of the adapter's time in the bench/core-replay.ts profile).
 */
export function callContext(
  ctx: Omit<CallContext, "sessionId" | "time">,
  sessionId: string,
  time: number,
): CallContext {
  return {
    sessionId,
    parentId: ctx.parentId,
    agent: ctx.agent,
    time,
    directory: ctx.directory,
    testPatterns: ctx.testPatterns,
    writePrior: ctx.writePrior,
    worktree: ctx.worktree,
    bashMemo: ctx.bashMemo,
  };
}

export interface RawToolCall {
  tool: string;
  callId: string;
  args: unknown;
  metadata: unknown;
  status: "completed" | "error";
  /** What the tool answered (output or error text): hashed into ToolCall.outcome, then dropped. */
  output?: unknown;
  /**
   * The answer's hash when a loader hashed it already and dropped the text
   * (calibrate's opencode.db reader, to keep memory flat); wins over `output`.
   */
  outcome?: string | null;
}

type Args = Rec;

/**
 * Every metadata key this file reads (exit, the edit's diff, the patch's files,
 * write's exists and filepath). A loader that holds many sessions keeps only
 * these (shared/adapters/stored.ts storedPart): a key read here must be listed.
 */
export const TOOL_METADATA_KEYS: readonly string[] = ["exit", "diff", "files", "exists", "filepath"];

function filePathOf(args: Args): string | undefined {
  return str(args.filePath) ?? str(args.file_path) ?? str(args.path) ?? str(args.file);
}

/** Files named in an apply_patch text's headers, without reading its hunks. */
export function patchFiles(patchText: string): string[] {
  const out: string[] = [];
  for (const m of patchText.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$/gm))
    out.push((m[1] as string).trim());
  for (const m of patchText.matchAll(/^\+\+\+ (?:b\/)?(.+)$/gm))
    if (m[1] !== "/dev/null") out.push((m[1] as string).trim());
  return [...new Set(out)];
}

interface Shape {
  target: string;
  key: string;
}

/**
 * What one call's shape and effect read besides its arguments, worked out
 * once: a bash command's facts (its key, target and landing share one parse)
 * and the arguments as canonical JSON (the fingerprint and some keys hash it).
 */
interface Read {
  /** The tool's name in lower case, and its kind. */
  lower: string;
  kind: ToolKind | undefined;
  bash: BashFacts | null;
  canonical: string;
}

/** The shape of any call but bash (whose target and key hash come with its BashFacts). */
function shapeOf(tool: string, args: Args, meta: Args, ctx: CallContext, read: Read): Shape {
  const { lower: t, kind } = read;
  const dir = ctx.directory;
  if (t === "invalid") {
    // opencode's stand-in for a call the model sent with bad arguments: the
    // tool it meant and the validation error are all it records.
    const meant = str(args.tool) ?? "?";
    return {
      target: `invalid ${meant.slice(0, 40)}`,
      key: `invalid|${meant}|${sha256(str(args.error) ?? "")}`,
    };
  }
  if (kind === "read") {
    const p = coarsePath(filePathOf(args) ?? "?", dir);
    // Sliced reading (offset/limit) is normal work: each slice is its own key.
    return { target: p, key: `read|${p}|${num(args.offset) ?? ""}|${num(args.limit) ?? ""}` };
  }
  if (kind === "edit" || kind === "write") {
    // Retries of an edit on one file change their text; the file is the key.
    const p = coarsePath(filePathOf(args) ?? "?", dir);
    return { target: p, key: `${kind}|${p}` };
  }
  if (kind === "patch") {
    const metaFiles = Array.isArray(meta.files)
      ? meta.files
          .map((f) => str(obj(f).relativePath) ?? str(obj(f).filePath))
          .filter((f): f is string => !!f)
      : [];
    const files = (
      metaFiles.length ? metaFiles : patchFiles(str(args.patchText) ?? str(args.patch) ?? "")
    ).map((f) => coarsePath(f, dir));
    const sorted = [...new Set(files)].sort();
    const target =
      sorted.length === 0
        ? "(patch)"
        : sorted.length === 1
          ? (sorted[0] as string)
          : `${sorted[0]} +${sorted.length - 1}`;
    return { target, key: `patch|${sorted.join(",")}` };
  }
  if (kind === "search") {
    const p = coarsePath(str(args.path) ?? str(args.directory) ?? ".", dir);
    const pattern = str(args.pattern) ?? str(args.query) ?? str(args.include) ?? "";
    const include = str(args.include) ?? "";
    return {
      target: `${p} #${shortHash(pattern)}`,
      key: `${t}|${p}|${sha256(`${pattern}\u0000${include}`)}`,
    };
  }
  if (t === "task") {
    const agent = str(args.subagent_type) ?? str(args.agent) ?? "task";
    return { target: `agent:${agent}`, key: `task|${agent}|${sha256(read.canonical)}` };
  }
  if (t === "todowrite" || t === "todoread")
    return { target: "todos", key: `${t}|${sha256(read.canonical)}` };
  if (t === "webfetch" || t === "fetch") {
    let host = "?";
    try {
      host = new URL(str(args.url) ?? "").hostname || "?";
    } catch {
      host = "?";
    }
    return { target: host, key: `webfetch|${sha256(str(args.url) ?? "")}` };
  }
  if (t === "skill")
    return { target: `skill:${str(args.name) ?? "?"}`, key: `skill|${str(args.name) ?? ""}` };
  return { target: tool.slice(0, 64), key: `${t}|${sha256(read.canonical)}` };
}

/** The effect of most calls, one value shared (never changed): not an object per call. */
const NO_EFFECT: { readonly effect: Effect; readonly change: null; readonly write: null } = Object.freeze({
  effect: "none",
  change: null,
  write: null,
});

function effectOf(
  args: Args,
  meta: Args,
  status: RawToolCall["status"],
  exit: number | null,
  ctx: CallContext,
  read: Read,
) {
  if (status !== "completed") return NO_EFFECT;
  const { kind, bash } = read;
  if (kind === "edit" || kind === "patch") {
    const diff = str(meta.diff) ?? "";
    if (diff.trim() === "") return NO_EFFECT;
    const change =
      diffChange(diff) ??
      editChange(
        filePathOf(args) ?? "?",
        str(args.oldString) ?? "",
        str(args.newString) ?? str(args.patchText) ?? "",
      );
    return { effect: "change" as Effect, change, write: null };
  }
  if (kind === "write") {
    const path = coarsePath(filePathOf(args) ?? str(meta.filepath) ?? "?", ctx.directory);
    const content = sha256(str(args.content) ?? "");
    const existed = typeof meta.exists === "boolean" ? meta.exists : null;
    return {
      effect: "change" as Effect,
      change: null,
      write: { path, content, prior: ctx.writePrior, existed },
    };
  }
  if (bash) {
    if (exit === 0 && commits(bash)) return { effect: "commit" as Effect, change: null, write: null };
    // A command that edits a work-tree file by its text and exits 0 is a
    // change. The live probe, when it answers, judges by the tree instead (landing.ts).
    const change = exit === 0 ? textEdit(bash, ctx.directory) : null;
    if (runsTests(bash, ctx.testPatterns)) return { effect: "test" as Effect, change, write: null };
    if (change) return { effect: "change" as Effect, change, write: null };
  }
  return NO_EFFECT;
}

/**
 * The one place a finished tool call becomes a ToolCall, at `time` (the
 * context's unless given: a loader hands one context to every call of a
 * message rather than a copy per call).
 */
export function toToolCall(raw: RawToolCall, ctx: CallContext, time: number = ctx.time): ToolCall {
  const args = obj(raw.args);
  const meta = obj(raw.metadata);
  const lower = raw.tool.toLowerCase();
  const kind = toolKind(lower);
  const isBash = kind === "bash";
  const exit = isBash ? (num(meta.exit) ?? null) : null;
  const timedOut = isBash && "exit" in meta && meta.exit === null;
  const failed = raw.status === "error" || (exit !== null && exit !== 0) || timedOut || lower === "invalid";
  // Reworded commands over the same files and slice collapse to one key
  // (`cd repo && cat f`, `cat /repo/f`), while the program stays in it (shared/bash-key.ts).
  const bash = isBash
    ? bashFacts(str(args.command) ?? "", ctx.directory, ctx.testPatterns, ctx.bashMemo)
    : null;
  const read: Read = { lower, kind, bash, canonical: canonicalJson(args) };
  // A bash call's target and key hash come with its facts; any other call's key is hashed here.
  const shape = bash ? null : shapeOf(raw.tool, args, meta, ctx, read);
  const { effect, change, write } = effectOf(args, meta, raw.status, exit, ctx, read);
  return {
    sessionId: ctx.sessionId,
    parentId: ctx.parentId,
    agent: slugAgent(ctx.agent),
    tool: raw.tool,
    callId: raw.callId,
    fp: argumentFingerprint(raw.tool, read.canonical),
    nfp: shape ? sha256(shape.key) : (bash as BashFacts).nfp,
    target: shape ? shape.target : (bash as BashFacts).target,
    exit,
    failed,
    effect,
    change,
    write,
    outcome: outcomeOf(raw, exit),
    worktree: isBash ? (ctx.worktree ?? null) : null,
    time,
  };
}

/** A call's fingerprint: its tool and its arguments as canonical JSON (a retry with the same arguments has the same). */
export function argumentFingerprint(tool: string, canonical: string): string {
  return sha256(`${tool}\u0000${canonical}`);
}

/** bash's real exit code is metadata.exit (never output.exitCode / exit_code); null on timeout or abort. */
function exitOf(tool: string, meta: Rec): number | null {
  return toolKind(tool) === "bash" ? (num(meta.exit) ?? null) : null;
}

/** The answer's hash (see outcome.ts); null when the source kept no answer. */
function outcomeOf(raw: RawToolCall, exit: number | null): string | null {
  if (raw.outcome !== undefined) return raw.outcome;
  return typeof raw.output === "string" ? outcomeHash(raw.status, exit, raw.output) : null;
}

/** The outcome a finished call's answer hashes to, as toToolCall would take it. */
export function answerOutcome(
  raw: Pick<RawToolCall, "tool" | "metadata" | "status" | "output">,
): string | null {
  // Not outcomeOf({ ...raw }): a spread per stored tool part took V8's slow copy path.
  return typeof raw.output === "string"
    ? outcomeHash(raw.status, exitOf(raw.tool, obj(raw.metadata)), raw.output)
    : null;
}
