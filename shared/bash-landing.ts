// Which project content a bash call may change, from its text: the one
// classifier behind both judges of a bash call. Replay (no work tree) lands
// the files it names as edits (`sed -i f`, `cat > f <<EOF`, `tee f`, ...,
// exit 0). The live probe lands a change only where this allows it: a file
// the call names as an edit, or, when some part of it runs something whose
// writes the text does not name (a script, `make`, `git apply`, an unknown
// program), any project file written while the call ran. A test or lint run
// changes nothing it can land unless its text asks it to write (`--fix`,
// `--write`, `-u`): what it writes is its output.
import { type Command, isCommitSegment, isTestSegment, parsed } from "./bash-command.ts";
import { hasInPlaceFlag, programOf } from "./bash-key.ts";
import { programReadOnly } from "./bash-may-write.ts";
import { bashWriteParts } from "./bash-writes.ts";

export interface BashLanding {
  /** Some part of the call may change project content (else it can never land). */
  can: boolean;
  /** Work-tree files the call edits by name, as written in the command. */
  edits: string[];
  /** Some part may change project files its text does not name. */
  unnamed: boolean;
  /** Work-tree files its text names as run output: never landed. */
  outputs: string[];
  /** A part is `git commit`: a new head commit is its change. */
  commits: boolean;
}

/** Programs that write only the files they name (their targets are in bashWriteParts' edits). */
const NAMED_WRITERS = new Set(["sed-i", "tee", "cp", "mv", "install", "git mv"]);
/** Programs whose printed text is the agent's (see bash-writes.ts); they write only by redirection. */
const PRINTERS = new Set(["echo", "printf", "awk", "gawk", "mawk", "envsubst", "base64", "yq", ":"]);
/** A test or lint run told to change files. */
const WRITE_FLAG =
  /^(--fix(=.*)?|--write|--apply(-unsafe)?|-u|--update(-snapshots?)?|--updateSnapshot|--snapshot-update|-w|--in-place|format|fmt)$/;
const SUBSTITUTION = /\$\(|`|[<>]\(/;

/** One simple command may write files its text does not name. */
function writesUnnamed(words: readonly string[], patterns: readonly RegExp[]): boolean {
  if (isTestSegment(words, patterns)) return words.some((w) => WRITE_FLAG.test(w));
  if (isCommitSegment(words)) return false;
  const program = programOf(words);
  if (program === "perl" && hasInPlaceFlag(words)) return false;
  if (/^[<>]|^\d*>/.test(words[0] ?? "")) return false;
  return !(programReadOnly(words) || NAMED_WRITERS.has(program) || PRINTERS.has(program));
}

/** What a bash command may land, read from its text (directory: the session's, for absolute paths). */
export function bashLanding(
  command: Command,
  testPatterns: readonly RegExp[],
  directory?: string | null,
): BashLanding {
  const p = parsed(command);
  const parts = bashWriteParts(p, directory);
  const edits = parts.edits.filter((e) => !e.startsWith("("));
  let unnamed = parts.edits.length > edits.length || SUBSTITUTION.test(p.text);
  let commits = false;
  for (const line of p.lines) {
    for (const words of line) {
      if (isCommitSegment(words)) commits = true;
      else if (!unnamed && writesUnnamed(words, testPatterns)) unnamed = true;
    }
  }
  return { can: edits.length > 0 || unnamed || commits, edits, unnamed, outputs: parts.outputs, commits };
}
