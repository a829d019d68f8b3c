// Whether a bash command can change the work tree, read from the command text
// alone. The live sensor fingerprints the work tree after every bash call that
// may write; the calls that only look (cat, grep, ls, git status) are skipped
// so reading costs nothing. Anything unknown may write: a command is read-only
// only when every simple command in it is a known read-only program without an
// option that makes it write, and nothing redirects output into a file.
import { type Command, parsed } from "./bash-command.ts";
import { programOf } from "./bash-key.ts";

/** Programs that only print (programOf's "view" covers cat/head/tail/nl/less/more/bat and sed without -i). */
const READ_ONLY = new Set([
  "view",
  "ls",
  "ll",
  "tree",
  "pwd",
  "echo",
  "printf",
  "grep",
  "egrep",
  "fgrep",
  "rg",
  "ag",
  "ack",
  "find",
  "wc",
  "stat",
  "file",
  "du",
  "df",
  "which",
  "whereis",
  "type",
  "date",
  "whoami",
  "id",
  "uname",
  "hostname",
  "printenv",
  "true",
  "false",
  "test",
  "[",
  "basename",
  "dirname",
  "realpath",
  "readlink",
  "cut",
  "tr",
  "jq",
  "md5sum",
  "sha1sum",
  "sha256sum",
  "cksum",
  "od",
  "hexdump",
  "strings",
  "column",
  "nproc",
  "free",
  "ps",
  "cmp",
  "diff",
  "comm",
  "paste",
  "fold",
  "rev",
  "seq",
  "sleep",
  "tac",
  "sort",
  "uniq",
  "xxd",
  // set-up words that change only the shell itself
  "cd",
  "pushd",
  "popd",
  "export",
  "unset",
  "set",
  "alias",
  "exit",
  ":",
]);

const GIT_READ_ONLY = new Set([
  "git status",
  "git log",
  "git show",
  "git diff",
  "git blame",
  "git grep",
  "git ls-files",
  "git ls-tree",
  "git rev-parse",
  "git rev-list",
  "git describe",
  "git shortlog",
  "git cat-file",
]);

/** find's actions that delete, run a program or write a file. */
const FIND_WRITES = new Set([
  "-delete",
  "-exec",
  "-execdir",
  "-ok",
  "-okdir",
  "-fprint",
  "-fprint0",
  "-fprintf",
  "-fls",
]);
const OUTPUT_REDIRECT = /^(\d*|&)?(>>?|>\|)(.*)$/;
/** A sed `w file` command (or the `w` flag of `s///w file`) writes a file even without -i. */
const SED_WRITE = /(?:^|[;{}\n\d$/]\s*)[wW]\s+\S/;

/** sed's scripts: the -e / --expression values, else its first operand. */
function sedScripts(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 1; i < words.length; i++) {
    const w = words[i] as string;
    if (w === "-e" || w === "--expression") out.push(words[++i] ?? "");
    else if (w.startsWith("--expression=")) out.push(w.slice(13));
  }
  if (out.length > 0) return out;
  const first = words.slice(1).find((w) => !w.startsWith("-"));
  return first === undefined ? [] : [first];
}

function writesOutput(words: readonly string[]): boolean {
  for (let i = 0; i < words.length; i++) {
    const m = OUTPUT_REDIRECT.exec(words[i] as string);
    if (!m) continue;
    const target = m[3] !== "" ? (m[3] as string) : (words[i + 1] ?? "");
    // `2>&1`, `>&2` and /dev/null write nothing to the work tree.
    if (target.startsWith("&") || target === "/dev/null") continue;
    return true;
  }
  return false;
}

function nonFlagCount(words: readonly string[]): number {
  return words.slice(1).filter((w) => !w.startsWith("-")).length;
}

/** One simple command (words, prefixes and wrappers removed) is read-only. */
function readOnly(words: readonly string[]): boolean {
  return !writesOutput(words) && programReadOnly(words);
}

/** The program of one simple command only looks (its redirections aside). */
export function programReadOnly(words: readonly string[]): boolean {
  const program = programOf(words);
  if (GIT_READ_ONLY.has(program)) return !words.some((w) => w.startsWith("--output"));
  if (!READ_ONLY.has(program)) return false;
  const base = (words[0] ?? "").slice((words[0] ?? "").lastIndexOf("/") + 1);
  switch (base) {
    case "sed":
      return !sedScripts(words).some((script) => SED_WRITE.test(script));
    case "find":
      return !words.some((w) => FIND_WRITES.has(w));
    case "sort":
      return !words.some((w) => w === "-o" || w.startsWith("--output") || /^-[a-zA-Z]*o/.test(w));
    case "tree":
      return !words.includes("-o");
    case "uniq":
    case "xxd":
      // `uniq in out` and `xxd in out` write their second file.
      return nonFlagCount(words) <= 1;
  }
  return true;
}

/**
 * False only when the command cannot change a file: every simple command is a
 * known read-only program and no output goes to a file. Command substitution
 * and process substitution may run anything, so they count as writing.
 */
export function bashMayWrite(command: Command): boolean {
  const p = parsed(command);
  if (/\$\(|`|[<>]\(/.test(p.text)) return true;
  return !p.segments.every(readOnly);
}
