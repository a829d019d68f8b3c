/**
 * Every value of a repeatable flag (`--export a --export b`, `--export=a`),
 * comma-separated lists split. citty keeps only the last one, so the raw
 * arguments are read; the parsed value is the fallback.
 */
export function repeated(rawArgs: readonly string[], name: string, parsed: unknown): string[] {
  const values: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const a = rawArgs[i] as string;
    if (a === "--") break;
    if (a === `--${name}` && i + 1 < rawArgs.length) values.push(rawArgs[++i] as string);
    else if (a.startsWith(`--${name}=`)) values.push(a.slice(name.length + 3));
  }
  if (!values.length && typeof parsed === "string") values.push(parsed);
  return values
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter(Boolean);
}
