// doctor's "reporting" link: plugins whose headers reach the gate while
// their reports do not (the router's /health lists them with the URL each
// reports to). That is a loop missed while the gate shows the plugin "live":
// a broken link in every mode.
import type { CheckResult } from "./checks.ts";
import type { DoctorFacts } from "./facts.ts";

export function checkReporting(f: DoctorFacts): CheckResult {
  const base = { id: "reporting", needed: true };
  if (!f.router.ok)
    return {
      ...base,
      status: "skip",
      detail: "needs the router (its /health says which plugins report)",
      fix: null,
    };
  const h = f.router.health;
  const silent = h.plugins_headers_only ?? [];
  if (silent.length === 0) {
    const live = h.plugins_live === undefined ? "" : `${h.plugins_live} plugin(s) report; `;
    return { ...base, status: "pass", detail: `${live}no plugin sends headers without reporting`, fix: null };
  }
  const urls = [
    ...new Set(
      silent.map((p) => {
        const url = p.report_url ?? "a URL it did not say";
        return p.report_state === "failing" ? `${url} (its deliveries fail)` : url;
      }),
    ),
  ];
  return {
    ...base,
    status: "fail",
    detail: `${silent.length} plugin(s) send headers through the gate but do not report: they report to ${urls.join(", ")}, this router is ${f.routerUrl}`,
    fix: `unset STALLGUARD_URL and plugin.router_url where opencode runs (a plugin then reads ~/.config/stallguard/router.json, which serve writes), or set STALLGUARD_URL=${f.routerUrl}; then restart opencode`,
  };
}
