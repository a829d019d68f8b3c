// The work-tree probe's cost per bash call on a 10,000-file git repository
// (generated here under a temp dir, committed, then edited with sed -i), and
// proof that it stays off the tool path: tool.execute.after returns before
// the probe has finished, and its own time is printed beside the probe's.
//
//   npx tsx bench/worktree-probe.ts [--files 10000] [--calls 40]

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hooksOf } from "../plugin/_test-hooks.ts";
import { Stallguard } from "../plugin/runtime.ts";
import { loadSettings } from "../plugin/settings.ts";
import { type GitRunner, WorktreeProbe } from "../plugin/worktree-probe.ts";
import { bashMayWrite } from "../shared/index.ts";
import { arg, fmt, medianOf, nowNs, percentile } from "./core-stats.ts";

const FILES = arg("files", 10_000);
const CALLS = arg("calls", 40);

const dir = mkdtempSync(join(tmpdir(), "stallguard-bench-probe-"));
const git = (...args: string[]) =>
  execFileSync("git", ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", ...args], {
    cwd: dir,
    stdio: "ignore",
  });

/**
 * 100 directories of FILES/100 small source files, one commit. The files are
 * dated an hour back, as in a real checkout: files written in the same second
 * as the index are "racily clean" and git would re-read all of them on every
 * status (the probe never rewrites the index).
 */
function makeRepo(): number {
  const t0 = nowNs();
  const past = Date.now() / 1000 - 3600;
  for (let d = 0; d < 100; d++) {
    const sub = join(dir, "src", `pkg${d}`);
    mkdirSync(sub, { recursive: true });
    for (let f = 0; f < FILES / 100; f++) {
      const file = join(sub, `mod${f}.py`);
      writeFileSync(file, `# module ${d}/${f}\nvalue = ${f}\n\ndef run():\n    return value * ${d}\n`);
      utimesSync(file, past, past);
    }
  }
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-q", "-m", "initial");
  return Number(nowNs() - t0) / 1e6;
}

const ms = (ns: number) => ns / 1e6;
const us = (ns: number) => ns / 1e3;

try {
  const buildMs = makeRepo();
  console.log(
    `generated git repo: ${FILES.toLocaleString("en-US")} files, committed in ${fmt(buildMs / 1000, 1)} s`,
  );

  // 1. The probe alone: a sed -i edit, then the wait for the fingerprint answer.
  const probe = new WorktreeProbe({ directory: dir, timeoutMs: 30_000 });
  probe.refresh();
  await probe.idle();
  const probeNs: number[] = [];
  let landed = 0;
  for (let i = 0; i < CALLS; i++) {
    const file = `src/pkg${i % 100}/mod${i % (FILES / 100)}.py`;
    const command = `sed -i 's/value = [0-9]*/value = ${1000 + i}/' ${file}`;
    await probe.before("ses_b", `p${i}`, command);
    execFileSync("sh", ["-c", command], { cwd: dir });
    const t0 = nowNs();
    const answer = await probe.after("ses_b", `p${i}`, command);
    probeNs.push(Number(nowNs() - t0));
    if (answer && answer.after !== answer.before) landed++;
  }
  probeNs.sort((a, b) => a - b);

  // 2. The read-only check that lets cat/grep/git status skip the probe.
  const reads = [
    "cat src/pkg1/mod1.py",
    "grep -rn value src | head",
    "git status --short",
    "sed -n 1,20p a.py",
  ];
  const skipNs: number[] = [];
  for (let i = 0; i < 20_000; i++) {
    const t0 = nowNs();
    bashMayWrite(reads[i % reads.length] as string);
    skipNs.push(Number(nowNs() - t0));
  }
  skipNs.sort((a, b) => a - b);

  // 3. The plugin: tool.execute.after returns at once; the call's verdict waits for the probe.
  const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
  const sgProbe = new WorktreeProbe({ directory: dir, timeoutMs: 30_000 });
  const sg = new Stallguard({
    settings: { ...settings, toasts: false },
    directory: dir,
    fetch: async () => new Response("{}", { status: 200 }),
    probe: sgProbe,
    probeWaitMs: 30_000,
  });
  sgProbe.refresh();
  await sgProbe.idle();
  const afterNs: number[] = [];
  const judgedNs: number[] = [];
  let pendingAtReturn = 0;
  const WARM = 10;
  for (let i = -WARM; i < CALLS; i++) {
    const file = `src/pkg${(i * 7 + 700) % 100}/mod${(i + WARM) % (FILES / 100)}.py`;
    const command = `sed -i 's/value = [0-9]*/value = ${2000 + i}/' ${file}`;
    const input = { tool: "bash", sessionID: "ses_p", callID: `c${i}`, args: { command } };
    await hooksOf(sg).toolBefore(input, { args: input.args });
    execFileSync("sh", ["-c", command], { cwd: dir });
    const t0 = nowNs();
    hooksOf(sg).toolAfter(input, {
      title: command,
      output: "",
      metadata: { exit: 0, output: "", truncated: false },
    });
    const t1 = nowNs();
    const pending = sg.stats().waiting > 0;
    await sg.settled();
    if (i < 0) continue; // warm-up
    afterNs.push(Number(t1 - t0));
    if (pending) pendingAtReturn++;
    judgedNs.push(Number(nowNs() - t0));
  }
  const pluginLanded = (sg.forest.get("ses_p")?.signals().landed ?? 0) - WARM;
  await sg.dispose();
  afterNs.sort((a, b) => a - b);
  judgedNs.sort((a, b) => a - b);

  // The same moment (right after a real command, caches cold, the loaded
  // machine's scheduling in it) for a bare sha256 of the arguments: the floor
  // any hook pays there.
  const floorNs: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const command = `sed -i 's/never-there/x/' src/pkg${i % 100}/mod0.py`;
    execFileSync("sh", ["-c", command], { cwd: dir });
    const t0 = nowNs();
    createHash("sha256").update(JSON.stringify({ command })).digest("hex");
    floorNs.push(Number(nowNs() - t0));
  }
  floorNs.sort((a, b) => a - b);

  // 4. The hook's own CPU cost, warm: the same path 3,000 times with git
  // answering at once (a stand-in runner), so only the plugin's work is timed.
  const instant: GitRunner = async (args, _cwd, onData) => {
    if (args[0] === "rev-parse") onData(Buffer.from(`${dir}\n`));
    return { code: 0, stderr: "" };
  };
  const warmProbe = new WorktreeProbe({ directory: dir, run: instant, maxPending: 1e9 });
  const warm = new Stallguard({
    settings: { ...settings, toasts: false },
    directory: dir,
    fetch: async () => new Response("{}", { status: 200 }),
    probe: warmProbe,
  });
  warmProbe.refresh();
  await warmProbe.idle();
  const warmNs: number[] = [];
  for (let i = 0; i < 3000; i++) {
    const command = `sed -i 's/value = [0-9]*/value = ${i}/' src/pkg${i % 100}/mod${i % 100}.py`;
    const input = { tool: "bash", sessionID: "ses_w", callID: `w${i}`, args: { command } };
    await hooksOf(warm).toolBefore(input, { args: input.args });
    const t0 = nowNs();
    hooksOf(warm).toolAfter(input, {
      title: command,
      output: "",
      metadata: { exit: 0, output: "", truncated: false },
    });
    warmNs.push(Number(nowNs() - t0));
    await warm.settled();
  }
  await warm.dispose();
  warmNs.sort((a, b) => a - b);

  console.log(`work-tree probe, ${CALLS} bash calls that each edit one file with sed -i`);
  console.log(
    `  probe per bash call (git status + changed files, off the tool path): median ${fmt(ms(medianOf(probeNs)), 1)} ms, p90 ${fmt(ms(percentile(probeNs, 90)), 1)} ms; ${landed}/${CALLS} seen as changes`,
  );
  console.log(
    `  tool.execute.after with the probe on:  median ${fmt(us(medianOf(afterNs)), 1)} us, p90 ${fmt(us(percentile(afterNs, 90)), 1)} us right after the command (a bare sha256 there: ${fmt(us(medianOf(floorNs)), 1)} us); returned before the probe finished in ${pendingAtReturn}/${CALLS} calls`,
  );
  console.log(
    `  tool.execute.after, warm (3,000 calls): median ${fmt(us(medianOf(warmNs)), 1)} us, p90 ${fmt(us(percentile(warmNs, 90)), 1)} us`,
  );
  console.log(
    `  the call judged (probe answered):     median ${fmt(ms(medianOf(judgedNs)), 1)} ms after the hook returned; ${pluginLanded}/${CALLS} landed`,
  );
  console.log(
    `  read-only check that skips the probe (cat, grep, git status, sed -n): median ${fmt(us(medianOf(skipNs)), 2)} us`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
