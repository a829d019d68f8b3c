// Reads a bash command string for the parts the core may keep: which files it
// touches, the numbers in it (the slice), what program it runs, and whether it
// is a commit or a test. Never keeps the rest of the command.
import { MATCH_CHARS } from "./regex-safety.ts";

const SEPARATORS = new Set(["&&", "||", ";", "|", "&", "|&"]);
const PREFIX_PROGRAMS = new Set(["cd", "export", "source", ".", "set", "pushd", "popd", "unset"]);
const WRAPPERS = new Set(["env", "time", "nice", "nohup", "sudo", "command", "exec", "timeout"]);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

const HEREDOC_OPEN = /(?<!<)<<(-?)[ \t]*(['"]?)([A-Za-z_][\w.-]*)\2/g;

/**
 * A command with its here-document bodies taken out: the shell text the
 * tokenizer reads (a body is data, not words or separators) and the bodies,
 * which callers only hash. An unterminated body runs to the end.
 */
export function splitHeredocs(command: string): { shell: string; bodies: string[] } {
  if (!command.includes("<<")) return { shell: command, bodies: [] };
  const lines = command.split("\n");
  const shell: string[] = [];
  const bodies: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    shell.push(line);
    i++;
    const delims = [...line.matchAll(HEREDOC_OPEN)].map((m) => ({
      strip: m[1] === "-",
      word: m[3] as string,
    }));
    for (const d of delims) {
      const body: string[] = [];
      while (i < lines.length) {
        const l = lines[i] as string;
        i++;
        if ((d.strip ? l.replace(/^\t+/, "") : l).trim() === d.word) break;
        body.push(l);
      }
      bodies.push(body.join("\n"));
    }
  }
  return { shell: shell.join("\n"), bodies };
}

const SQ = 39; // '
const DQ = 34; // "
const BACKSLASH = 92;
const NEWLINE = 10;
const AMP = 38;
const SEMI = 59;
const PIPE = 124;
const LT = 60;
const GT = 62;

/** The characters /\s/ matches (a newline is handled before this). */
function isSpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 160) return false;
  return (
    c === 160 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** A character that ends a run of plain word characters. */
function isSpecial(c: number): boolean {
  return c === SQ || c === DQ || c === BACKSLASH || c === SEMI || c === AMP || c === PIPE || isSpace(c);
}

/** Where a quote opened at `i` (the quote) ends, and the text inside it with escapes applied. */
function quoted(command: string, i: number): [string, number] {
  const q = command.charCodeAt(i);
  let text = "";
  let start = i + 1;
  let j = start;
  while (j < command.length) {
    const c = command.charCodeAt(j);
    if (c === q) break;
    if (c === BACKSLASH && q === DQ && j + 1 < command.length) {
      text += command.slice(start, j) + command[j + 1];
      j += 2;
      start = j;
    } else j++;
  }
  return [text + command.slice(start, j), j + 1];
}

/**
 * Splits a command into words and separator tokens, honouring quotes and
 * backslashes. A newline outside quotes separates commands like `;`; a
 * backslash-newline continues the line. Runs of plain characters are sliced,
 * not appended one by one: this runs for every bash call replayed.
 */
export function tokenize(command: string): string[] {
  const out: string[] = [];
  const n = command.length;
  let cur = "";
  let inWord = false;
  let i = 0;
  while (i < n) {
    const start = i;
    while (i < n && !isSpecial(command.charCodeAt(i))) i++;
    if (i > start) {
      cur += command.slice(start, i);
      inWord = true;
      if (i >= n) break;
    }
    const c = command.charCodeAt(i);
    if (c === SQ || c === DQ) {
      const [text, next] = quoted(command, i);
      cur += text;
      inWord = true;
      i = next;
    } else if (c === BACKSLASH) {
      if (i + 1 < n && command.charCodeAt(i + 1) === NEWLINE) i += 2;
      else {
        cur += i + 1 < n ? command[i + 1] : "\\";
        inWord = true;
        i += 2;
      }
    } else if (c === AMP && (endsInAngle(cur) || command.charCodeAt(i + 1) === GT)) {
      // a redirection (2>&1, >&2, &>file), not a separator
      cur += "&";
      inWord = true;
      i++;
    } else {
      if (inWord) out.push(cur);
      cur = "";
      inWord = false;
      i += separator(command, i, c, out);
    }
  }
  if (inWord) out.push(cur);
  return out;
}

function endsInAngle(word: string): boolean {
  const last = word.charCodeAt(word.length - 1);
  return last === LT || last === GT;
}

/** Pushes the separator at `i` (none for blanks; `;` for a newline) and returns its length. */
function separator(command: string, i: number, c: number, out: string[]): number {
  if (c === NEWLINE) out.push(";");
  if (c !== SEMI && c !== AMP && c !== PIPE) return 1;
  const two = command.slice(i, i + 2);
  if (two === "&&" || two === "||" || two === "|&") {
    out.push(two);
    return 2;
  }
  out.push(command[i] as string);
  return 1;
}

/**
 * A bash command read once: its here-document bodies, its pipelines and its
 * simple commands. The key, the target and the landing of one call all read
 * this one value (toToolCall parses each command once); functions below take
 * it or the command text, which they parse.
 */
export interface ParsedCommand {
  readonly text: string;
  /** Here-document bodies: data, only ever hashed. */
  readonly bodies: readonly string[];
  /** Pipelines (`a | b` is one, `a && b` two) of simple commands, env assignments and wrappers removed. */
  readonly lines: string[][][];
  /** Every simple command, in order. */
  readonly segments: string[][];
}

export type Command = string | ParsedCommand;

export function parseCommand(command: string): ParsedCommand {
  const { shell, bodies } = splitHeredocs(command);
  const lines = splitPipelines(shell);
  return { text: command, bodies, lines, segments: lines.flat() };
}

/** The parsed command: parsed now when given as text. */
export function parsed(command: Command): ParsedCommand {
  return typeof command === "string" ? parseCommand(command) : command;
}

/** The command split at separators into simple commands, env assignments and wrappers removed. */
export function segments(command: Command): string[][] {
  return parsed(command).segments;
}

/**
 * The command as pipelines (`a | b` is one, `a && b` two), each a list of
 * simple commands with env assignments and wrappers removed: what a stage
 * writes comes from the stages before it in its pipeline.
 */
export function pipelines(command: Command): string[][][] {
  return parsed(command).lines;
}

function splitPipelines(shell: string): string[][][] {
  const out: string[][][] = [[[]]];
  for (const tok of tokenize(shell)) {
    const line = out[out.length - 1] as string[][];
    if (tok === "|" || tok === "|&") line.push([]);
    else if (SEPARATORS.has(tok)) out.push([[]]);
    else (line[line.length - 1] as string[]).push(tok);
  }
  return out.map((line) => line.map(stripPrefixes).filter((s) => s.length > 0)).filter((l) => l.length > 0);
}

function stripPrefixes(words: string[]): string[] {
  let i = 0;
  while (i < words.length) {
    const w = words[i] as string;
    if (ASSIGNMENT.test(w)) i++;
    else if (WRAPPERS.has(w)) {
      i++;
      // timeout takes a duration argument; env/sudo may take flags
      while (i < words.length && /^(-\S+|\d+[smhd]?)$/.test(words[i] as string)) i++;
    } else break;
  }
  return i === 0 ? words : words.slice(i);
}

/**
 * Programs that only wait, print a constant or end the shell: `sleep 1 && cat
 * f` is about `cat f`. echo and printf count only when they write nowhere but
 * the screen.
 */
const FILLER_PROGRAMS = new Set([
  "sleep",
  "true",
  "false",
  ":",
  "wait",
  "clear",
  "echo",
  "printf",
  "exit",
  "return",
]);

function isFiller(words: readonly string[]): boolean {
  const program = words[0] as string;
  if (!FILLER_PROGRAMS.has(program)) return false;
  return !((program === "echo" || program === "printf") && words.some((w) => /^\d*>/.test(w)));
}

/**
 * The simple command that does the work: the first that is neither set-up
 * (cd, export, source) nor filler (sleep, true, a bare echo); else the first
 * that is not set-up; else the first.
 */
export function mainSegment(command: Command): string[] {
  const segs = segments(command);
  return (
    segs.find((s) => !PREFIX_PROGRAMS.has(s[0] as string) && !isFiller(s)) ??
    segs.find((s) => !PREFIX_PROGRAMS.has(s[0] as string)) ??
    segs[0] ??
    []
  );
}

const SECRET_TOKEN =
  /^(sk-|sk_|pk_|rk_|ghp_|gho_|ghs_|github_pat_|xox[abprs]-|AKIA|ASIA|AIza|glpat-|npm_|hf_|eyJ)[A-Za-z0-9_.-]{6,}/;

/** A word that may carry a secret: a key-shaped token, a URL with credentials, long random text. */
export function looksSecret(word: string): boolean {
  if (SECRET_TOKEN.test(word)) return true;
  if (/^[a-z][a-z0-9+.-]*:\/\/[^/\s]*@/i.test(word)) return true;
  if (/^(bearer|basic|token)$/i.test(word)) return true;
  const bare = word.replace(/^-+[A-Za-z-]*=?/, "");
  if (bare.length >= 20 && !/[/\\]/.test(bare) && /[0-9]/.test(bare) && /[A-Za-z]/.test(bare)) {
    // long mixed letters+digits without path separators: a key, hash or token
    if (!/\.[A-Za-z]{1,8}$/.test(bare)) return true;
  }
  return false;
}

/** Redacts one word for a target: secrets vanish, `--flag=value` keeps the flag, quoted text is dropped. */
export function redactWord(word: string): string | null {
  if (ASSIGNMENT.test(word)) return null;
  if (looksSecret(word)) return "<redacted>";
  // a quoted string with spaces is text (a message, a script), not a coarse token
  if (/\s/.test(word)) return "<text>";
  const eq = /^(--?[A-Za-z][\w-]*)=/.exec(word);
  if (eq) return `${eq[1]}=<value>`;
  return word.length > 120 ? `${word.slice(0, 117)}...` : word;
}

/** A command's coarse target: its program and first argument, redacted. */
export function commandTarget(command: Command): string {
  // Only the first two words kept are redacted: the rest of a long command is never read.
  const words: string[] = [];
  for (const word of mainSegment(command)) {
    const kept = redactWord(word);
    if (kept !== null && words.push(kept) === 2) break;
  }
  return words.join(" ") || "(empty)";
}

const FILE_EXTENSIONS =
  "py|pyi|js|mjs|cjs|ts|tsx|jsx|json|jsonl|md|rst|txt|yaml|yml|toml|cfg|ini|conf|sh|bash|zsh|rs|go|java|kt|kts|swift|c|h|cc|cpp|hpp|cs|rb|php|html|htm|css|scss|less|sql|lock|xml|csv|tsv|log|env|vue|svelte|gradle|diff|patch|proto|graphql|tf|lua|dart|ex|exs|erl|hs|ml|scala|r|pl|ipynb|db|sqlite|cfg";
const PATHLIKE = new RegExp(
  // a/b, ./x, ~/x, /abs/path; or a bare name with a known extension. Matches
  // start only where a word starts, and each segment ends in its own "/", so
  // a long word cannot make the scan backtrack (it was exponential before).
  `(?<![\\w.@+~-])(?:(?:~|\\.{1,2})?(?:/(?:[\\w.@+-]+/)*|(?:[\\w.@+-]+/)+)[\\w.@+-]+|[\\w@+-][\\w.@+-]*\\.(?:${FILE_EXTENSIONS})(?![\\w]))`,
  "g",
);
const URL_WORD = /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*:\/\/\S+/gi;

/** The text with its URLs blanked (a URL is not a file); only a text with "://" can hold one. */
function withoutUrls(text: string): string {
  return text.includes("://") ? text.replace(URL_WORD, " ") : text;
}

/** A path-like match as a file name, normalized; null when it names no file (a device, arithmetic). */
function fileOf(match: string): string | null {
  const p = match.replace(/^\.\//, "").replace(/[.,:;]+$/, "");
  if (p === "" || p === "." || p === "/" || /^\/?(dev\/null|dev\/stdout|dev\/stderr)$/.test(p)) return null;
  if (/^\d+(\/\d+)*$/.test(p)) return null; // 1/2 is arithmetic, not a path
  return p.replace(/\/+$/, "");
}

/** Files a command refers to, normalized (no ./ prefix) and sorted. URLs are ignored. */
export function referencedFiles(command: string): string[] {
  const found = new Set<string>();
  for (const m of withoutUrls(command).matchAll(PATHLIKE)) {
    const p = fileOf(m[0]);
    if (p !== null) found.add(p);
  }
  return [...found].sort();
}

/** referencedFiles(command).length > 0, without collecting them: stops at the first. */
export function refersToFile(command: string): boolean {
  for (const m of withoutUrls(command).matchAll(PATHLIKE)) if (fileOf(m[0]) !== null) return true;
  return false;
}

/** Simple commands as one line: words joined by spaces, commands by " ; ". */
export function joinSegments(segs: readonly (readonly string[])[]): string {
  return segs.map((s) => s.join(" ")).join(" ; ");
}

const RESPLIT = /[\s'"\\;|]/;
const DIGIT = /\d/;

/** A word the tokenizer reads back as itself: no blank, quote, backslash, `;` or `|`, each `&` a redirection's. */
function readsBack(word: string): boolean {
  if (word === "" || RESPLIT.test(word)) return false;
  for (let k = word.indexOf("&"); k >= 0; k = word.indexOf("&", k + 1)) {
    const before = word.charCodeAt(k - 1);
    if (before !== LT && before !== GT && word.charCodeAt(k + 1) !== GT) return false;
  }
  return true;
}

/**
 * What parseCommand(text) gives for `text` = joinSegments(segs), when that is
 * segs again (every word reads back as itself), so the text need not be
 * tokenized a second time; null when it must be.
 */
export function rejoined(segs: string[][], text: string): ParsedCommand | null {
  for (const s of segs) for (const w of s) if (!readsBack(w)) return null;
  return { text, bodies: [], lines: segs.map((s) => [s]), segments: segs };
}

/** A command's numbers are read from at most its first this many characters (a read's slice sits at its start). */
const NUMBER_CHARS = 4096;

/**
 * The numbers in a command outside file names: line ranges, counts, offsets
 * (`1,100p`, `-n 100`, `-n100`). Env assignments and file-descriptor numbers
 * of redirections (`2>&1`, `2>/dev/null`) are not part of the slice.
 */
export function commandNumbers(command: Command, files: readonly string[]): string[] {
  let text = withoutUrls(joinSegments(segments(command)));
  let blank = files;
  if (text.length > NUMBER_CHARS) {
    // Blanking every file is files x length: a long generated command (thousands of files) took seconds.
    const cut = text.lastIndexOf(" ", NUMBER_CHARS);
    text = text.slice(0, cut > 0 ? cut : NUMBER_CHARS);
    const here = new Set(referencedFiles(text));
    blank = files.filter((f) => here.has(f));
  }
  for (const f of [...blank].sort((a, b) => b.length - a.length)) text = text.split(f).join(" ");
  // Every number is a digit, and every redirection has an angle bracket: most commands skip both passes.
  if (!DIGIT.test(text)) return [];
  if (text.includes("<") || text.includes(">"))
    text = text.replace(/(?<!\d)\d*(?:&>>?|[<>]+)(?:&(?:\d+|-))?/g, " ");
  return [...text.matchAll(/(?<![\w.])\d+(?!\.\d)|(?<=(?:^|\s)-[A-Za-z])\d+/g)].map((m) => m[0]);
}

/**
 * The simple commands that do the work: without directory changes and other
 * set-up prefixes (`cd x && cat f` is `cat f`), env assignments and wrappers
 * removed; all of them when every one is a set-up prefix.
 */
export function workSegments(command: Command): string[][] {
  const segs = segments(command);
  const work = segs.filter((s) => !PREFIX_PROGRAMS.has(s[0] as string));
  return work.length ? work : segs;
}

const COMMIT = /^git(\s+(-C|-c)\s+\S+|\s+--[\w-]+(=\S+)?)*\s+commit(\s|$)/;

/** One simple command is `git commit` (including --amend). */
export function isCommitSegment(words: readonly string[]): boolean {
  return COMMIT.test(words.join(" "));
}

/** The command runs `git commit` (including --amend) in any of its segments. */
export function isCommitCommand(command: Command): boolean {
  return segments(command).some(isCommitSegment);
}

/** The command runs a test or lint tool from the configured patterns in any segment. */
export function isTestCommand(command: Command, patterns: readonly RegExp[]): boolean {
  return segments(command).some((s) => isTestSegment(s, patterns));
}

/** One simple command runs a test or lint tool from the configured patterns. */
export function isTestSegment(words: readonly string[], patterns: readonly RegExp[]): boolean {
  // A bounded prefix: what backtracking a pattern has left stays small (shared/regex-safety.ts).
  const line = words.join(" ").slice(0, MATCH_CHARS);
  return patterns.some((re) => re.test(line));
}
