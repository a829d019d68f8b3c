// An opencode.db of session trees for the calibrate --jobs tests: the recorded
// sessions (an orchestrator with six sub-agents, a sub-agent pair) and
// synthetic trees of three (a root, its child, that child's child; every
// fourth session a read loop), enough rows for `workers` worker threads.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ExportDoc, syntheticSession, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import { MIN_ROWS_PER_WORKER } from "../../router-ext/calibrate/replay-plan.ts";

const RECORDED = join(import.meta.dirname, "..", "fixtures", "recorded");
const CALLS = 100;
/** Parts and messages a synthetic session of CALLS calls writes, at the least (step-start, tool, step-finish). */
const ROWS_PER_SESSION = CALLS * 4;

/** Writes the db; returns the id of its last synthetic session. */
export function writeTreeDb(path: string, workers: number): string {
  const docs: ExportDoc[] = readdirSync(RECORDED)
    .filter((f) => f.endsWith(".json") && f !== "labels.json")
    .sort()
    .map((f) => JSON.parse(readFileSync(join(RECORDED, f), "utf8")) as ExportDoc);
  const synthetic = Math.ceil((workers * MIN_ROWS_PER_WORKER * 1.05) / ROWS_PER_SESSION / 3) * 3;
  let last = "";
  for (let i = 0; i < synthetic; i++) {
    const doc = syntheticSession(i, CALLS, { loopEvery: 4, steps: true });
    const parent = i % 3 === 0 ? null : docs[docs.length - 1]?.info.id;
    docs.push({ ...doc, info: { ...doc.info, parentID: parent ?? null } });
    last = doc.info.id;
  }
  writeOpencodeDb(path, docs);
  return last;
}

/**
 * Breaks, in place, every page of the part table that holds a tool part of
 * `sessionId` (its page type byte): the listing and the row counts still read
 * (they never touch those pages), reading that session's parts fails with
 * SQLITE_CORRUPT. Returns how many pages were broken.
 */
export function corruptToolPages(path: string, sessionId: string): number {
  const file = readFileSync(path);
  const raw = file.readUInt16BE(16);
  const pageSize = raw === 1 ? 65536 : raw;
  let broken = 0;
  for (let at = pageSize; at < file.length; at += pageSize) {
    const page = file.subarray(at, at + pageSize);
    if (page.includes(sessionId) && page.includes('{"type":"tool"')) {
      page[0] = 0xff;
      broken++;
    }
  }
  writeFileSync(path, file);
  return broken;
}
