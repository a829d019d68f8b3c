import { defaultJobs } from "./replay-plan.ts";

/** A bad argument: the command exits 2 with the message. */
export class UsageError extends Error {}

/** --jobs: a whole number from 1 to 64; unset, the cores node reports (at most 8). */
export function jobsOf(value: number | string | null | undefined): number {
  if (value === null || value === undefined || value === "") return defaultJobs();
  const n = typeof value === "number" ? value : /^\d+$/.test(value.trim()) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > 64)
    throw new UsageError(`--jobs: a whole number of threads from 1 to 64, not ${String(value)}`);
  return n;
}

/**
 * Every value of a repeatable flag (`--export a --export b`, `--export=a`),
 * comma-separated lists split. citty keeps only the last one, so the raw
 * arguments are read; the parsed value is the fallback.
 */
export function repeated(rawArgs: readonly string[], name: string, parsed: unknown): string[] {
  return listFlag(rawArgs, name, [], parsed).values;
}

function splitList(values: readonly string[]): string[] {
  return values
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);
}

export interface ListFlag {
  values: string[];
  /** Positional words that follow no instance of the flag: the caller refuses them. */
  stray: string[];
}

/**
 * A flag that takes a list (`--export a.json b.json dir/`): its values plus
 * the words after each value up to the next flag. citty parses those words as
 * positionals, so they are claimed from `positionals` one by one; a word left
 * over (after a boolean flag, say) is stray, never silently dropped.
 */
export function listFlag(
  rawArgs: readonly string[],
  name: string,
  positionals: readonly string[],
  parsed: unknown,
): ListFlag {
  const values: string[] = [];
  const left = [...positionals];
  const claim = (word: string) => {
    const at = left.indexOf(word);
    if (at < 0) return false;
    left.splice(at, 1);
    return true;
  };
  for (let i = 0; i < rawArgs.length; i++) {
    const a = rawArgs[i] as string;
    if (a === "--") break;
    if (a === `--${name}` && i + 1 < rawArgs.length) values.push(rawArgs[++i] as string);
    else if (a.startsWith(`--${name}=`)) values.push(a.slice(name.length + 3));
    else continue;
    while (i + 1 < rawArgs.length && !(rawArgs[i + 1] as string).startsWith("-")) {
      if (!claim(rawArgs[i + 1] as string)) break;
      values.push(rawArgs[++i] as string);
    }
  }
  if (!values.length && typeof parsed === "string") values.push(parsed);
  return { values: splitList(values), stray: left };
}
