import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { tempDirForTests } from "../../test/helpers/temp-dir.ts";
import { defaultStatePath, emptyState, loadState, pruneState, saveState } from "./state.ts";

const tmp = tempDirForTests("stallguard-wd-state-");

describe("watchdog state file", () => {
  test("default path follows XDG_STATE_HOME", () => {
    expect(defaultStatePath({ XDG_STATE_HOME: "/s", HOME: "/h" })).toBe("/s/stallguard/watchdog.json");
    expect(defaultStatePath({ HOME: "/h" })).toBe("/h/.local/state/stallguard/watchdog.json");
  });

  test("missing -> empty, silently", () => {
    const logs: string[] = [];
    expect(loadState(join(tmp, "none.json"), (l) => logs.push(l))).toEqual(emptyState());
    expect(logs).toEqual([]);
  });

  test("malformed or wrong-shaped -> empty, with one log line", () => {
    for (const [i, text] of [
      "{oops",
      JSON.stringify({ version: 2 }),
      JSON.stringify({ ...emptyState(), extra: 1 }),
    ].entries()) {
      const path = join(tmp, `bad${i}.json`);
      writeFileSync(path, text);
      const logs: string[] = [];
      expect(loadState(path, (l) => logs.push(l))).toEqual(emptyState());
      expect(logs).toHaveLength(1);
    }
  });

  test("round trip, private file mode, no temp file left behind", () => {
    const path = join(tmp, "dir", "state.json");
    const s = emptyState();
    s.last_tick_at = 123;
    s.router_down_alerted = true;
    s.sessions.ses_a = { verdict: "looping", seen_at: 100 };
    saveState(path, s);
    expect(loadState(path)).toEqual(s);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8").endsWith("\n")).toBe(true);
  });

  test("prune keeps the most recently seen sessions", () => {
    const s = emptyState();
    for (let i = 0; i < 10; i++) s.sessions[`ses_${i}`] = { verdict: "ok", seen_at: i };
    const p = pruneState(s, 3);
    expect(Object.keys(p.sessions).sort()).toEqual(["ses_7", "ses_8", "ses_9"]);
    expect(pruneState(s, 100)).toBe(s);
  });
});
