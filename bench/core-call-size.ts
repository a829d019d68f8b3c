// One tool call's cost inside opencode as its arguments grow: generated bash
// commands of N steps, files or pipes, an answer on one long line, and
// arguments nested deep. Each is judged as the plugin does on
// tool.execute.after (the hook's payload to a call), against the floor of a
// bare scan: the text split into words on blanks and hashed. The time per
// 1,000 characters stays flat as N grows when the cost is linear. It grew with
// N while a long command's numbers were read by blanking every file across the
// whole text (20,000 steps or pipes: over 30 s), and a one-line answer was masked whole.
//
//   npx tsx bench/core-call-size.ts [--sizes 1000,5000,20000] [--rounds 5]
import { createHash } from "node:crypto";
import { parseArgs } from "node:util";
import { parseToolHook, toolHookCall } from "../shared/index.ts";
import { defaultPolicy, fmt, medianOf, printTable, timeMs } from "./core-stats.ts";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,5000,20000" },
    rounds: { type: "string", default: "5" },
  },
});
const sizes = String(values.sizes).split(",").map(Number);
const rounds = Number(values.rounds);
const policy = defaultPolicy();

interface Shape {
  tool: string;
  args: Record<string, unknown>;
  output?: string;
}

const SHAPES: Record<string, (n: number) => Shape> = {
  "bash, n steps (cd d && sed -i ... f.py ; ...)": (n) => ({
    tool: "bash",
    args: { command: Array.from({ length: n }, (_, i) => `cd d${i} && sed -i s/a/b/ f${i}.py`).join(" ; ") },
  }),
  "bash, n files (git add ...)": (n) => ({
    tool: "bash",
    args: { command: `git add ${Array.from({ length: n }, (_, i) => `src/m${i}/f${i}.ts`).join(" ")}` },
  }),
  "bash, n pipes (grep i fi.ts | ...)": (n) => ({
    tool: "bash",
    args: { command: Array.from({ length: n }, (_, i) => `grep ${i} f${i}.ts`).join(" | ") },
  }),
  "webfetch, an answer of n x 100 characters on one line": (n) => ({
    tool: "webfetch",
    args: { url: "https://example.com/a", format: "text" },
    output: `{"rows":[${Array.from({ length: n }, (_, i) => `{"id":${i},"at":"2026-12-05T00:00:00Z","v":"${"x".repeat(50)}"}`).join(",")}]}`,
  }),
  "edit, arguments n arrays deep": (n) => {
    let deep: unknown = [];
    for (let i = 0; i < n; i++) deep = [deep];
    return { tool: "edit", args: { filePath: "a.ts", deep } };
  },
};

function judge(c: Shape, round: number): unknown {
  const hook = parseToolHook(
    { tool: c.tool, sessionID: "s", callID: `c${round}`, args: c.args },
    { metadata: { exit: 0 }, output: c.output ?? "" },
  );
  return toolHookCall(hook, {
    parentId: null,
    agent: "build",
    directory: "/repo",
    time: 0,
    ...policy,
  } as never);
}

/** The text that grows: the command, or the answer. */
function textOf(c: Shape): string | null {
  return typeof c.args.command === "string" ? c.args.command : (c.output ?? null);
}

/** A bare scan: the text split into words and hashed (the deep shape: its path alone). */
function floor(c: Shape): string {
  const text = textOf(c) ?? String(c.args.filePath);
  return createHash("sha256").update(text.split(/\s+/).join(" ")).digest("hex");
}

const rows: string[][] = [];
for (const [name, make] of Object.entries(SHAPES)) {
  for (const n of sizes) {
    const c = make(n);
    const t = { judge: [] as number[], floor: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      t.floor.push(timeMs(() => floor(c)));
      t.judge.push(timeMs(() => judge(c, r)));
    }
    const text = textOf(c);
    const chars = text?.length ?? n;
    const ms = medianOf(t.judge);
    const perK = text === null ? "-" : fmt((ms * 1e6) / chars, 1);
    rows.push([
      name,
      n.toLocaleString("en-US"),
      chars.toLocaleString("en-US"),
      fmt(ms),
      perK,
      fmt(ms / Math.max(medianOf(t.floor), 0.001)),
    ]);
  }
}
printTable(["shape", "n", "characters", "call ms", "us per 1,000 chars", "x floor"], rows);
console.log(
  `\nmedian of ${rounds} rounds each, a fresh call id each (the session memo does not answer); floor: the text split into words on blanks and hashed`,
);
