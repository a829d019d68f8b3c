// What toToolCall reads of one bash command: its coarse target, the hash of
// its normalized key, and (read only when a call needs them) whether it
// commits, runs tests, or edits a work-tree file by its text. A loader that
// converts a whole session hands every call a memo of these by command text:
// agents re-run the same commands, and each distinct one is parsed once. The
// memo lives as long as the session's conversion; only hashes and coarse
// targets are ever kept from it.
import {
  commandTarget,
  isCommitCommand,
  isTestCommand,
  type ParsedCommand,
  parseCommand,
} from "./bash-command.ts";
import { bashKey } from "./bash-key.ts";
import { bashWrites } from "./bash-writes.ts";
import { coarsePath } from "./coarse-path.ts";
import { sha256 } from "./hash.ts";

export interface BashFacts {
  readonly command: ParsedCommand;
  readonly target: string;
  /** sha256 of bashKey: the call's nfp. */
  readonly nfp: string;
  commit?: boolean;
  test?: boolean;
  /** The fingerprints of the edit a command makes by its text (exit 0); null when it edits nothing. */
  change?: { fwd: string; rev: string } | null;
}

/** Facts by command text, for one directory and one set of test patterns (one session's). */
export interface BashMemo {
  readonly directory: string | null | undefined;
  readonly testPatterns: readonly RegExp[];
  readonly facts: Map<string, BashFacts>;
}

/** Past this many distinct commands a memo stops growing (the facts are still computed). */
const MAX_FACTS = 10_000;

export function bashMemo(directory: string | null | undefined, testPatterns: readonly RegExp[]): BashMemo {
  return { directory, testPatterns, facts: new Map() };
}

/**
 * The facts of `text` run in `directory`: from `memo` when it was made for
 * the same directory and patterns and has them, else worked out now.
 */
export function bashFacts(
  text: string,
  directory: string | null | undefined,
  testPatterns: readonly RegExp[],
  memo?: BashMemo | null,
): BashFacts {
  const usable = memo && memo.directory === directory && memo.testPatterns === testPatterns ? memo : null;
  const known = usable?.facts.get(text);
  if (known) return known;
  const command = parseCommand(text);
  const facts: BashFacts = {
    command,
    target: commandTarget(command),
    nfp: sha256(bashKey(command, (p) => coarsePath(p, directory))),
  };
  if (usable && usable.facts.size < MAX_FACTS) usable.facts.set(text, facts);
  return facts;
}

/** The command runs `git commit` in one of its segments. */
export function commits(facts: BashFacts): boolean {
  facts.commit ??= isCommitCommand(facts.command);
  return facts.commit;
}

/** The command runs a test or lint tool from `patterns`. */
export function runsTests(facts: BashFacts, patterns: readonly RegExp[]): boolean {
  facts.test ??= isTestCommand(facts.command, patterns);
  return facts.test;
}

/**
 * The edit a command makes by its text when it exits 0 (shared/bash-writes.ts):
 * the same command again changes nothing new. Null when it edits nothing.
 */
export function textEdit(
  facts: BashFacts,
  directory: string | null | undefined,
): { fwd: string; rev: string } | null {
  if (facts.change === undefined) {
    const text = facts.command.text;
    facts.change =
      bashWrites(facts.command, directory).length > 0
        ? { fwd: sha256(`bash-write\u0000${text}`), rev: sha256(`bash-unwrite\u0000${text}`) }
        : null;
  }
  return facts.change === null ? null : { fwd: facts.change.fwd, rev: facts.change.rev };
}
