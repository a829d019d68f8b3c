// Data that sits beside the repo, not in it (../shared/corpus/...). A suite
// that needs it skips when it is absent, and says so in the test output: one
// console line at collection and a title naming the missing path, so a green
// run without the corpus never reads as a run with it.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

export interface BesideRepo {
  /** Absolute path of the data. */
  path: string;
  /** Its path as the repo names it, e.g. ../shared/corpus/real-trajectories. */
  shown: string;
  present: boolean;
  /** The suite's title, or, when the data is absent, that title with the reason it is skipped. */
  title: (name: string) => string;
}

/**
 * Looks up ../shared/<parts> (and the file `need` inside it, when given);
 * prints one line naming what is missing when it is absent.
 */
export function besideRepo(parts: string[], need?: string): BesideRepo {
  const path = join(REPO, "..", "shared", ...parts);
  const shown = ["..", "shared", ...parts].join("/");
  const present = existsSync(need ? join(path, need) : path);
  const missing = need ? `${shown}/${need}` : shown;
  const reason = `skipped: ${missing} not found (the corpus sits beside the repo, not in it)`;
  if (!present) console.warn(`stallguard tests: ${reason}`);
  return { path, shown, present, title: (name) => (present ? name : `${name} [${reason}]`) };
}
