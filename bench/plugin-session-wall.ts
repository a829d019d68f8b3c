// Wall time of a 200-call scripted session in the real opencode binary, with
// and without the plugin, run alternately on two warm `opencode serve`
// processes; quoted as a ratio of medians. The plugin reports to a local
// receiver, as it would to the router.
//
//   npx tsx bench/plugin-session-wall.ts [--rounds N] [--calls N]
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startReceiver } from "../plugin/_test-receiver.ts";
import { type ModelReply, scriptRouter, startModelServer } from "../test/helpers/model-server.ts";
import { type OpencodeServer, startOpencode } from "../test/helpers/opencode.ts";
import { arg } from "./core-stats.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const BUNDLE = join(REPO, "dist", "plugin", "stallguard.js");

const ROUNDS = arg("rounds", 3);
const CALLS = arg("calls", 200);

const files: Record<string, string> = {};
for (let i = 0; i < 40; i++) files[`src/f${i}.txt`] = `line ${i}\n`.repeat(20);

function callFor(oc: OpencodeServer, step: number): ModelReply {
  if (step >= CALLS) return { kind: "text", text: "done" };
  const i = step % 40;
  const call =
    step % 4 === 3
      ? { name: "bash", args: { command: `wc -l src/f${i}.txt`, description: "Count" } }
      : { name: "read", args: { filePath: join(oc.projectDir, `src/f${i}.txt`), offset: step % 3 } };
  return { kind: "tools", calls: [call] };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

execFileSync("node", [join(REPO, "deploy", "build.mjs")], { cwd: REPO, stdio: "inherit" });
const receiver = await startReceiver();
const router = scriptRouter();
const model = await startModelServer({ script: router.script });
const env = { STALLGUARD_URL: receiver.url };
const withPlugin = await startOpencode({ modelUrl: model.url, plugins: [BUNDLE], env, projectFiles: files });
const bare = await startOpencode({ modelUrl: model.url, env, projectFiles: files });
const times: Record<"plugin" | "bare", number[]> = { plugin: [], bare: [] };
try {
  const runOne = async (oc: OpencodeServer) => {
    const s = await oc.createSession({ title: "wall" });
    router.on(s.id, (req) => callFor(oc, req.step));
    const t0 = Date.now();
    await oc.prompt(s.id, "go", { timeoutMs: 600_000 });
    const ms = Date.now() - t0;
    router.off(s.id);
    return ms;
  };
  // One warm-up session each (lazy init on the first prompt).
  await runOne(withPlugin);
  await runOne(bare);
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which goes first, so drift in machine load hits both.
    const order = r % 2 === 0 ? (["plugin", "bare"] as const) : (["bare", "plugin"] as const);
    for (const which of order) {
      const ms = await runOne(which === "plugin" ? withPlugin : bare);
      times[which].push(ms);
      console.log(`round ${r + 1} ${which}: ${ms} ms`);
    }
  }
} finally {
  await withPlugin.stop();
  await bare.stop();
  await model.close();
  await receiver.close();
}
const p = median(times.plugin);
const b = median(times.bare);
console.log(
  `${CALLS}-call session, ${ROUNDS} rounds: median with plugin ${p} ms, without ${b} ms, ratio ${(p / b).toFixed(3)}`,
);
console.log(`receiver got ${receiver.messages.length} messages (${receiver.invalid.length} invalid)`);
