// The normalized key of a bash command: what it runs and on what, so that
// rewordings of one action collapse (`cat f`, `cd repo && cat ./f 2>/dev/null`,
// `nl -ba f | sed -n 1,20p` vs `sed -n 1,20p f`) while different actions on
// the same file stay apart (`rm x.py`, `python x.py`, `cat x.py`).
import {
  type Command,
  commandNumbers,
  joinSegments,
  parsed,
  referencedFiles,
  refersToFile,
  rejoined,
  workSegments,
} from "./bash-command.ts";
import { sha256 } from "./hash.ts";

/** Programs that only print a file or a slice of it: one class, so rewordings of one read collapse. */
const VIEWERS = new Set(["cat", "head", "tail", "nl", "less", "more", "bat", "batcat"]);
const GIT_OPTION_WITH_VALUE = new Set(["-C", "-c", "--git-dir", "--work-tree"]);

function basename(word: string): string {
  const i = word.lastIndexOf("/");
  return i >= 0 ? word.slice(i + 1) : word;
}

/** `sed -i`, `sed --in-place=.bak`, `sed -ni`, `perl -pi -e`: an in-place edit flag. */
export function hasInPlaceFlag(words: readonly string[]): boolean {
  return words.some((w, i) => i > 0 && (/^-[a-zA-Z]*i/.test(w) || w.startsWith("--in-place")));
}

/** The program a simple command runs, normalized: python3.11 -> python, sed without -i -> view. */
export function programOf(words: readonly string[]): string {
  const first = words[0] ?? "";
  let base = basename(first).toLowerCase();
  if (/^python\d*(\.\d+)?$/.test(base)) {
    if (words[1] === "-m" && words[2]) return basename(words[2]).toLowerCase();
    return "python";
  }
  if (/^pip\d*(\.\d+)?$/.test(base)) base = "pip";
  if (VIEWERS.has(base)) return "view";
  if (base === "sed") return hasInPlaceFlag(words) ? "sed-i" : "view";
  if (base === "git") {
    let i = 1;
    while (i < words.length && (words[i] as string).startsWith("-")) {
      i += GIT_OPTION_WITH_VALUE.has(words[i] as string) ? 2 : 1;
    }
    return `git ${words[i] ?? ""}`.trim();
  }
  return base || "(empty)";
}

const REDIRECT = /^(\d*|&)?(<<?<?|>>?|>\|)/;
const NUMERIC = /^[\d,:.+-]+p?$/;

/**
 * The words of a simple command that say what it does beyond its program,
 * files and numbers: a grep pattern, a `python -c` snippet, a script argument.
 * Flags, redirections, file names and bare numbers are left out, so the
 * wording around one action does not split its key.
 */
function literalWords(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 1; i < words.length; i++) {
    const w = words[i] as string;
    if (w.startsWith("-") || REDIRECT.test(w) || NUMERIC.test(w) || w === "") continue;
    if (refersToFile(w)) continue;
    out.push(w);
  }
  return out;
}

/**
 * The key: the set of programs, the files (made relative by `rel`), the
 * numbers (the slice) and a hash of the literal words of every program that
 * is not a viewer, with here-document bodies. Viewers carry no literals, so a
 * sed print script does not split a slice read from its `head` rewording.
 */
export function bashKey(command: Command, rel: (path: string) => string): string {
  const p = parsed(command);
  const work = workSegments(p);
  const text = joinSegments(work);
  const found = referencedFiles(text);
  // The numbers come from the work text parsed again: mostly it parses back to `work` itself.
  const nums = commandNumbers(rejoined(work, text) ?? text, found);
  const files = [...new Set(found.map(rel))].filter((f) => f !== ".").sort();
  const programs = new Set<string>();
  const literals: string[] = [];
  for (const seg of work) {
    const p = programOf(seg);
    programs.add(p);
    if (p !== "view") literals.push(p, ...literalWords(seg));
  }
  const bodies = p.bodies;
  const lit = literals.length || bodies.length ? sha256([...literals, ...bodies].join("\u0000")) : "";
  if (work.length === 0 && p.segments.length === 0) return "bash|(empty)";
  return `bash|p:${[...programs].sort().join(",")}|f:${files.join(",")}|n:${nums.join(",")}|l:${lit}`;
}
