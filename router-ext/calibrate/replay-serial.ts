// calibrate --db in this thread alone (--jobs 1, one core, or a database too
// small for workers) when nothing needs the sessions afterwards: the listing
// and every read in one read transaction (one snapshot of the file), the
// trees read and judged one at a time in the listing's order
// (db-read.ts judgeTrees, what each worker runs), so only one tree's
// observations are held however long the history. Reading every session
// first and judging them after (sources.ts loadOpencodeDb, which --sweep,
// --margins and the labels need) prints the same.
import { type Policy, type ReplayResult, treesOf } from "../../shared/index.ts";
import { OpencodeDb } from "../opencode-db/reader.ts";
import { inListingOrder, judgeTrees, malformedWarnings } from "./db-read.ts";
import { applyFilters, type Filters } from "./sources.ts";

export interface SerialOptions extends Filters {
  policy: Policy;
  timeline: boolean;
  /** Sessions judged so far, after each tree. */
  onProgress?: (done: number, total: number) => void;
}

/** The chosen sessions' verdicts from the file at `path`, in the listing's order, with the warnings the read gave. */
export function replayFileSerially(
  path: string,
  opts: SerialOptions,
): { results: ReplayResult[]; warnings: string[] } {
  const reader = OpencodeDb.open(path);
  try {
    return reader.snapshot(() => {
      const listed = reader.allSessions();
      const chosen = applyFilters(listed.rows, opts);
      let next = 0;
      const run = judgeTrees(
        reader,
        treesOf(chosen),
        () => next++,
        opts,
        (n) => opts.onProgress?.(n, chosen.length),
      );
      const results = inListingOrder(chosen, run.results);
      return { results, warnings: malformedWarnings(listed.malformed + run.malformed) };
    });
  } finally {
    reader.close();
  }
}
