// `stallguard doctor`'s output: one line per check (ok, FAIL for a link the
// mode needs, warn for one it can do without, skip), the fix under each
// failure, and a closing line; or the same as one JSON document (--json).
import type { CheckResult } from "./checks.ts";

const label = (r: CheckResult) =>
  r.status === "pass" ? "ok" : r.status === "skip" ? "skip" : r.needed ? "FAIL" : "warn";

export function renderText(
  results: readonly CheckResult[],
  head: { mode: string; routerUrl: string },
): string {
  const width = Math.max(...results.map((r) => r.id.length));
  const lines = [`stallguard doctor: mode ${head.mode}, router ${head.routerUrl}`];
  for (const r of results) {
    lines.push(`  ${label(r).padEnd(4)}  ${r.id.padEnd(width)}  ${r.detail}`);
    if (r.status === "fail" && r.fix) lines.push(`  ${" ".repeat(4)}  ${" ".repeat(width)}  fix: ${r.fix}`);
  }
  const broken = results.filter((r) => r.status === "fail" && r.needed).map((r) => r.id);
  const warned = results.filter((r) => r.status === "fail" && !r.needed).length;
  lines.push(
    broken.length
      ? `${broken.length} broken link(s) ${head.mode} needs: ${broken.join(", ")}`
      : `everything ${head.mode} needs works${warned ? ` (${warned} warning(s))` : ""}`,
  );
  return `${lines.join("\n")}\n`;
}

export function renderJson(
  results: readonly CheckResult[],
  head: { mode: string; routerUrl: string; exitCode: number },
): string {
  return `${JSON.stringify(
    {
      mode: head.mode,
      router_url: head.routerUrl,
      ok: head.exitCode === 0,
      exit_code: head.exitCode,
      checks: results.map((r) => ({
        id: r.id,
        status: r.status === "fail" && !r.needed ? "warn" : r.status,
        needed: r.needed,
        detail: r.detail,
        fix: r.fix,
      })),
    },
    null,
    2,
  )}\n`;
}
