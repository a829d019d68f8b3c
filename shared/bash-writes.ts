// Which files a bash command writes, read from the command text alone (replay
// has no filesystem). Agents edit through bash as often as through the edit
// tool: `sed -i`, `cat <<EOF > f`, `tee`, `>`/`>>`, a python script that opens
// a file for writing, `git apply`, `patch`, `cp`/`mv` onto a file. Writes
// outside the work tree (/tmp, /dev, the home directory) are not changes to it.
import { segments, splitHeredocs } from "./bash-command.ts";
import { hasInPlaceFlag, programOf } from "./bash-key.ts";

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
function programTargets(words: readonly string[], bodies: readonly string[]): string[] {
  const program = programOf(words);
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
 * The work-tree files a bash command writes (as written in the command, or
 * `(patch)` / `(script)` when the command does not name them). Empty when it
 * cannot tell that the command writes anything.
 */
export function bashWrites(command: string, directory?: string | null): string[] {
  const bodies = splitHeredocs(command).bodies;
  const out = new Set<string>();
  for (const words of segments(command)) {
    for (const t of [...redirectTargets(words), ...programTargets(words, bodies)]) {
      if (t.startsWith("(") || insideWorkTree(t, directory)) out.add(t);
    }
  }
  return [...out];
}
