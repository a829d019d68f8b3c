// A child process for the crash-safety test: it stores one /progress body
// into a real SQLite file and kills itself with SIGKILL just before the
// statement numbered KILL_AT runs (0: never; one past the last: after the
// commit). Prints how many statements storing it ran.
// Usage: node ingest-child.mjs DB KILL_AT BODY_JSON KNOBS_JSON NOW
import { writeSync } from "node:fs";
import { openDatabase } from "../../router-ext/db/open.ts";
import { type PlanKnobs, planTransition } from "../../router-ext/modes/plan.ts";
import { openSqliteStore } from "../../router-ext/store/sqlite-store.ts";

const [dbPath, killAtArg, body, knobsJson, nowArg] = process.argv.slice(2);
const killAt = Number(killAtArg);
const now = Number(nowArg);
const knobs = JSON.parse(knobsJson as string) as PlanKnobs;
let tracing = false;
let ran = 0;
const store = await openSqliteStore(
  openDatabase(dbPath as string, {
    verbose: () => {
      if (!tracing) return;
      ran++;
      if (ran === killAt) process.kill(process.pid, "SIGKILL");
    },
  }),
);
tracing = true;
await store.storeProgress(JSON.parse(body as string), {
  now,
  plan: (ctx, t) => planTransition(ctx, t, knobs, now),
});
tracing = false;
if (killAt === ran + 1) process.kill(process.pid, "SIGKILL");
writeSync(1, String(ran));
await store.close();
