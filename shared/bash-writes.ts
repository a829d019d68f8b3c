// Which files a bash command writes, read from the command text alone (replay
// has no filesystem). Agents edit through bash as often as through the edit
// tool: `sed -i`, `cat <<EOF > f`, `tee`, `>`/`>>`, a python script that opens
// a file for writing, `git apply`, `patch`, `cp`/`mv` onto a file. Writes
// outside the work tree (/tmp, /dev, the home directory) are not changes to it.
// What a run prints is its output, not an edit: `npm test > out.txt` and
// `python repro.py | tee log.txt` write run output, `echo x > f` and
// `cat <<EOF | tee f` write content the agent gave; and a run-output path
// (shared/run-output.ts) is never an edit, whoever writes it.
import { type Command, parsed } from "./bash-command.ts";
import { hasInPlaceFlag, programOf } from "./bash-key.ts";
import { isRunOutput } from "./run-output.ts";

const OUTPUT_REDIRECT = /^(\d*|&)?(>>?|>\|)(.*)$/;
const SCRIPT_WRITES =
  /\bopen\s*\([^)]*,\s*(?:mode\s*=\s*)?['"][^'"]*[wax]|\.write_text\s*\(|\.write_bytes\s*\(|\bshutil\.(?:copy\w*|move)\s*\(|\bos\.(?:rename|replace)\s*\(|\bwriteFileSync\s*\(|\bFile\.write\s*\(/;
const SCRIPT_PROGRAMS = new Set(["python", "node", "ruby", "perl", "php"]);
const NOT_WORK_TREE = /^(\/dev\/|\/proc\/|\/tmp\/|\/var\/tmp\/|~)/;

function insideWorkTree(path: string, directory: string | null | undefined): boolean {
  if (path === "" || path.startsWith("&") || NOT_WORK_TREE.test(path)) return false;
  if (!path.startsWith("/")) return true;
  if (!directory) return true;
  const dir = directory.replace(/\/+$/, "");
  return path === dir || path.startsWith(`${dir}/`);
}

function nonFlags(words: readonly string[]): string[] {
  return words.slice(1).filter((w) => !w.startsWith("-") && !OUTPUT_REDIRECT.test(w) && !w.startsWith("<"));
}

/** Output redirections of one simple command (`> f`, `>>f`, `&> f`, `1> f`); stderr-only ones are logs. */
function redirectTargets(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const m = OUTPUT_REDIRECT.exec(words[i] as string);
    if (!m) continue;
    const fd = m[1] ?? "";
    const target = m[3] !== "" ? (m[3] as string) : (words[i + 1] ?? "");
    if (fd !== "" && fd !== "1" && fd !== "&") continue;
    out.push(target);
  }
  return out;
}

/** `sed -i [-e SCRIPT | -f FILE | SCRIPT] FILE...`: the files after the script. */
function sedFiles(words: readonly string[]): string[] {
  const files: string[] = [];
  let scriptGiven = false;
  for (let i = 1; i < words.length; i++) {
    const w = words[i] as string;
    if (w === "-e" || w === "-f" || w === "--expression" || w === "--file") {
      scriptGiven = true;
      i++;
    } else if (w.startsWith("--expression=") || w.startsWith("--file=")) scriptGiven = true;
    else if (w.startsWith("-") || OUTPUT_REDIRECT.test(w)) continue;
    else if (!scriptGiven) scriptGiven = true;
    else files.push(w);
  }
  return files;
}

/** The files one simple command writes by its own program (not by redirection). */
function programTargets(words: readonly string[], program: string, bodies: readonly string[]): string[] {
  const args = nonFlags(words);
  switch (program) {
    case "sed-i":
      return sedFiles(words);
    case "perl":
      if (hasInPlaceFlag(words)) return args.slice(-1);
      break;
    case "tee":
      return args;
    case "cp":
    case "mv":
    case "install":
      return args.length >= 2 ? args.slice(-1) : [];
    case "patch":
      return words.includes("--dry-run") ? [] : ["(patch)"];
    case "git apply":
    case "git am":
      return words.some((w) => w === "--check" || w === "--stat" || w === "--numstat") ? [] : ["(patch)"];
    case "git mv":
      return args.slice(-1);
  }
  if (SCRIPT_PROGRAMS.has(program)) {
    // A script given inline (-c / -e) or on stdin (a here-document) that opens a file for writing.
    const inline = words.some((w) => w === "-c" || w === "-e") ? args : [];
    if ([...inline, ...bodies].some((text) => SCRIPT_WRITES.test(text))) return ["(script)"];
  }
  return [];
}

/**
 * Programs whose printed text is what the agent gave them (a literal, a
 * here-document, a file, a filter of one): their redirected output is an
 * edit. Every other program runs something, and what it prints is its output.
 */
const AUTHORS = new Set([
  "view",
  "echo",
  "printf",
  "tee",
  "awk",
  "gawk",
  "mawk",
  "sort",
  "uniq",
  "cut",
  "tr",
  "paste",
  "jq",
  "yq",
  "envsubst",
  "base64",
  "column",
  "fold",
  "rev",
  "tac",
  "grep",
  "egrep",
  "fgrep",
  "diff",
  "git diff",
  "git show",
  ":",
  "true",
]);

/** The stage prints text the agent authored (a bare `> f` truncates: also authored). */
function authors(words: readonly string[], program: string): boolean {
  return OUTPUT_REDIRECT.test(words[0] ?? "") || AUTHORS.has(program);
}

export interface BashWriteParts {
  /** Work-tree files the command edits, as written, or `(patch)` / `(script)` when it does not name them. */
  edits: string[];
  /** Work-tree files that get a run's output (a run's redirect, a tee after a run, a run-output path). */
  outputs: string[];
}

/** The work-tree files a bash command writes, split into edits and run output. */
export function bashWriteParts(command: Command, directory?: string | null): BashWriteParts {
  const p = parsed(command);
  const bodies = p.bodies;
  const edits = new Set<string>();
  const outputs = new Set<string>();
  const add = (t: string, edit: boolean) => {
    if (t.startsWith("(")) edits.add(t);
    else if (!insideWorkTree(t, directory)) return;
    else if (edit && !isRunOutput(t)) edits.add(t);
    else outputs.add(t);
  };
  for (const line of p.lines) {
    let fedByRun = false;
    for (const words of line) {
      const program = programOf(words);
      const authoring = authors(words, program);
      const authored = !fedByRun && authoring;
      for (const t of redirectTargets(words)) add(t, authored);
      const own = programTargets(words, program, bodies);
      // tee writes what the stages before it printed.
      for (const t of own) add(t, program === "tee" ? authored : true);
      if (!authoring) fedByRun = true;
    }
  }
  return { edits: [...edits], outputs: [...outputs] };
}

/**
 * The work-tree files a bash command edits (as written in the command, or
 * `(patch)` / `(script)` when the command does not name them). Empty when it
 * cannot tell that the command edits anything.
 */
export function bashWrites(command: Command, directory?: string | null): string[] {
  return bashWriteParts(command, directory).edits;
}
