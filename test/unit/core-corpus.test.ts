// Replays every real trajectory in ../shared/corpus/real-trajectories,
// real-trajectories-2 and test/fixtures/external-trajectories (never used for
// tuning) with the thresholds from config/config.yaml: every
// session labelled "loop" must be flagged, no "healthy" one may be. "unclear"
// sessions are reported, not judged.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { formatConfigIssues, parseConfig } from "../../shared/config.ts";
import { policyFromConfig } from "../../shared/policy.ts";
import { type ReplayResult, type ReplaySession, replay } from "../../shared/replay.ts";
import { type BesideRepo, besideRepo } from "../helpers/beside-repo.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CORPORA: BesideRepo[] = [
  ...["real-trajectories", "real-trajectories-2"].map((d) => besideRepo(["corpus", d], "labels.json")),
  // in the repo: public runs the thresholds were never fitted to (its README has the sources)
  inRepo(fileURLToPath(new URL("../fixtures/external-trajectories", import.meta.url))),
];

/** A corpus committed in the repo: never skipped (a missing one fails the load). */
function inRepo(path: string): BesideRepo {
  return { path, shown: path, present: true, title: (name) => name };
}

interface LabelEntry {
  label: "loop" | "healthy" | "unclear";
  note?: string;
}

function load(CORPUS: string) {
  const cfg = parseConfig([
    { source: "config/config.yaml", text: readFileSync(`${ROOT}config/config.yaml`, "utf8") },
  ]);
  if (!cfg.ok) throw new Error(formatConfigIssues(cfg.issues));
  const policy = policyFromConfig(cfg.config);
  const labels = JSON.parse(readFileSync(`${CORPUS}/labels.json`, "utf8")) as Record<string, LabelEntry>;
  const sessions: ReplaySession[] = readdirSync(CORPUS)
    .filter((f) => /^ses_.*\.json$/.test(f))
    .sort()
    .map((f) => {
      const d = JSON.parse(readFileSync(`${CORPUS}/${f}`, "utf8"));
      return {
        id: d.info.id,
        parentId: d.info.parentID ?? null,
        directory: d.info.directory ?? null,
        messages: d.messages,
      };
    });
  // each session alone, as the plugin would see it, and all together as the calibrator does
  const alone = new Map<string, ReplayResult>(
    sessions.map((s) => [s.id, replay([s], policy)[0] as ReplayResult]),
  );
  const together = new Map(replay(sessions, policy).map((r) => [r.id, r]));
  return { policy, labels, sessions, alone, together };
}

for (const corpus of CORPORA) {
  const CORPUS = corpus.path;
  const have = corpus.present;
  describe.skipIf(!have)(corpus.title(`${CORPUS.split("/").pop()} with the default thresholds`), () => {
    const { labels, sessions, alone, together } = have ? load(CORPUS) : ({} as ReturnType<typeof load>);
    const byLabel = (l: LabelEntry["label"]) =>
      have ? sessions.filter((s) => labels[s.id]?.label === l) : [];

    it("has every session labelled, and both loops and healthy runs", () => {
      expect(sessions.length).toBeGreaterThanOrEqual(20);
      // a sub-agent session is judged with its labelled root
      for (const s of sessions.filter((x) => !x.parentId))
        expect(labels[s.id]?.label, s.id).toMatch(/^(loop|healthy|unclear)$/);
      expect(byLabel("loop").length).toBeGreaterThan(0);
      expect(byLabel("healthy").length).toBeGreaterThan(0);
      console.table(
        sessions.map((s) => {
          const r = alone.get(s.id) as ReplayResult;
          return {
            id: s.id,
            label: labels[s.id]?.label,
            calls: r.calls,
            landed: r.landed,
            dup: r.dup_share,
            worst: r.worst,
            first_flag_call: r.first_flag_call,
            reason: r.reason,
            top: `${r.top_target} x${r.top_target_count}`,
          };
        }),
      );
    });

    for (const s of byLabel("loop")) {
      const r = alone.get(s.id) as ReplayResult;
      it(`loop ${s.id} is flagged (first flag at call ${r.first_flag_call} of ${r.calls}, ${r.reason})`, () => {
        expect(r.worst, labels[s.id]?.note).not.toBe("ok");
        expect(r.first_flag_call).not.toBeNull();
        expect(r.first_flag_call as number).toBeLessThanOrEqual(r.calls);
        expect(together.get(s.id)?.first_flag_call).toBe(r.first_flag_call);
      });
    }

    for (const s of byLabel("healthy")) {
      const r = alone.get(s.id) as ReplayResult;
      it(`healthy ${s.id} is never flagged (${r.calls} calls, ${r.landed} landed)`, () => {
        expect(r.worst, labels[s.id]?.note).toBe("ok");
        expect(r.first_flag_call).toBeNull();
        expect(together.get(s.id)?.worst).toBe("ok");
      });
    }

    it("every loop is caught by the end of its run, on average with a fifth of the run still ahead", () => {
      const loops = byLabel("loop").map((s) => alone.get(s.id) as ReplayResult);
      for (const r of loops) expect(r.first_flag_call as number, r.id).toBeLessThanOrEqual(r.calls);
      const saved = loops.map((r) => 1 - (r.first_flag_call as number) / r.calls);
      // a regression bound: 0.30 on real-trajectories, 0.36 on real-trajectories-2 when calibrated
      expect(saved.reduce((a, b) => a + b, 0) / saved.length).toBeGreaterThan(0.2);
    });
  });
}
