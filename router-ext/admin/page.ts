// The admin page's HTML skeleton and its Content-Security-Policy. The only
// script is /admin/app.js (same origin); the only style is the inline block
// below, allowed by its hash; nothing is loaded from anywhere else.
import { createHash } from "node:crypto";

const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fbfbfc; --dim: #6a737d; --line: #d8dde3;
  --ok: #1a7f37; --stall: #9a6700; --loop: #cf222e; --head: #eef1f4; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --dim: #8b949e; --line: #30363d;
  --ok: #3fb950; --stall: #d29922; --loop: #f85149; --head: #161b22; } }
* { box-sizing: border-box; }
body { margin: 0; font: 13px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { position: sticky; top: 0; z-index: 1; display: flex; flex-wrap: wrap; gap: .4em 1.2em; align-items: center;
  padding: .5em 1em; background: var(--head); border-bottom: 1px solid var(--line); }
header h1 { font-size: 15px; margin: 0; }
main, #auth { padding: .5em 1em 2em; }
h2 { font-size: 14px; margin: 1.4em 0 .4em; }
h3 { font-size: 13px; margin: 1em 0 .3em; }
table { border-collapse: collapse; width: 100%; margin-bottom: .6em; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
th, td { text-align: left; vertical-align: top; padding: .2em .45em; border-bottom: 1px solid var(--line); }
thead th { font-weight: 600; color: var(--dim); white-space: nowrap; }
tr.tree-head th { background: var(--head); font-weight: 400; }
.tree-id { font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.sid, td.target { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
td.desc { color: var(--dim); max-width: 40em; }
td.target { word-break: normal; overflow-wrap: anywhere; min-width: 10em; }
td.target .count { white-space: nowrap; }
#sessions-table td.sid { white-space: nowrap; word-break: normal; }
table.knobs, table.excluded { table-layout: fixed; }
table.knobs th:nth-child(1), table.excluded th:nth-child(1) { width: 22em; }
table.knobs th:nth-child(2) { width: 34em; }
table.knobs th:nth-child(3) { width: 10em; }
table.knobs th:nth-child(4) { width: 10em; }
table.knobs td { overflow-wrap: anywhere; }
pre { margin: .2em 0; white-space: pre-wrap; font: 12px/1.4 ui-monospace, monospace; }
.dim { color: var(--dim); }
.err, .refused { color: var(--loop); }
.warn, .stale { color: var(--stall); }
.v { font-weight: 600; }
.v-ok { color: var(--ok); }
.v-stalling { color: var(--stall); }
.v-looping { color: var(--loop); }
.state.running { color: var(--ok); }
.state.ended { color: var(--dim); font-weight: 600; }
#sessions-table td.sid .title { font: 12px/1.3 system-ui, sans-serif; color: var(--dim); max-width: 32em;
  overflow: hidden; text-overflow: ellipsis; }
.about { margin: .1em 0 .5em; }
.about [data-about=title] { font-weight: 600; }
.about [data-about=folder] { font-family: ui-monospace, monospace; font-size: 12px; }
table.facts td[data-fact="top target"] { white-space: normal; overflow-wrap: anywhere;
  font-family: ui-monospace, monospace; font-size: 12px; }
.mark-note { font-style: italic; }
.state.refused { font-weight: 600; }
td.dead { color: var(--dim); }
tr.failed td { background: color-mix(in srgb, var(--loop) 8%, transparent); }
button { font: inherit; padding: .1em .6em; cursor: pointer; }
button.small { font-size: 12px; padding: 0 .4em; }
button:disabled { cursor: default; opacity: .5; }
input[type=number] { width: 8em; }
input[type=text] { width: 16em; }
textarea { width: 30em; font: 12px/1.4 ui-monospace, monospace; }
input[aria-invalid=true], textarea[aria-invalid=true], select[aria-invalid=true] { outline: 2px solid var(--loop); }
ul.err { margin: .3em 0; padding-left: 1.2em; }
nav a { margin-right: .8em; color: var(--fg); text-decoration: none; padding: .1em .3em; border-radius: 3px; }
nav a[aria-current=page] { background: var(--bg); border: 1px solid var(--line); font-weight: 600; }
a { color: #0969da; }
a.back { font-weight: 400; font-size: 13px; margin-right: .6em; }
td.sid a, a.sid { font-family: ui-monospace, monospace; font-size: 12px; }
table.facts th, table.facts td { white-space: nowrap; }
.mark-bar { margin: .6em 0; display: flex; gap: .4em; align-items: center; flex-wrap: wrap; }
.mark-bar button.mark-false, .mark-bar button.mark-loop { font-weight: 600; padding: .2em .9em; }
.mark-state { font-weight: 600; }
td.mark .false_alarm { color: var(--ok); font-weight: 600; }
td.mark .confirmed_loop { color: var(--loop); font-weight: 600; }
.timeline { overflow-x: auto; background: #fff; border: 1px solid var(--line); padding: 4px; display: inline-block; }
.legend { margin: .3em 0 .6em; display: flex; flex-wrap: wrap; gap: .2em 1em; }
.legend .sw { display: inline-block; width: 10px; height: 10px; margin-right: .3em; vertical-align: middle; }
.legend .sw.bar { height: 3px; }
.legend .sw.tick { width: 2px; }
table.evidence { width: auto; min-width: 50em; }
table.evidence th[scope=row] { font-weight: 400; white-space: nowrap; }
table.evidence tr.fired th, table.evidence tr.fired td:first-of-type { font-weight: 700; }
table.evidence tr.fired { background: color-mix(in srgb, var(--stall) 14%, transparent); }
.fired-mark { color: var(--loop); }
table.actions, table.history { width: auto; min-width: 40em; }
[hidden] { display: none !important; }
`;

/** A section the client fills in: its heading and an empty #<id>-body, shown in one tab. */
const panel = (id: string, title: string, tab: string) =>
  `  <section id="${id}" data-tab="${tab}">\n    <h2>${title}</h2>\n    <div id="${id}-body"></div>\n  </section>`;

const BODY = `
<header>
  <h1>stallguard</h1>
  <nav id="nav">
    <a href="#view=sessions" data-nav="sessions">Sessions</a>
    <a href="#view=activity" data-nav="activity">Alerts and breaker</a>
    <a href="#view=knobs" data-nav="knobs">Knobs</a>
  </nav>
  <span id="summary" class="dim"></span>
  <span id="status" class="dim" role="status"></span>
  <label><input type="checkbox" id="pref-auto"> auto-refresh</label>
  <label><input type="checkbox" id="pref-hide-ok"> hide ok trees</label>
  <button type="button" id="refresh-now">Refresh</button>
  <button type="button" id="forget-token">Forget token</button>
</header>
<section id="auth" hidden>
  <h2>Admin token</h2>
  <div id="auth-message" role="alert"></div>
  <form id="auth-form" autocomplete="off">
    <label>token <input type="password" id="token-input" autocomplete="off" spellcheck="false"></label>
    <button type="submit">Use token</button>
  </form>
</section>
<main id="app" hidden>
  <section id="sessions" data-tab="sessions">
    <h2>Sessions</h2>
    <div id="health" class="dim"></div>
    <ul id="sessions-problems" class="err"></ul>
    <table id="sessions-table"></table>
    <div id="marks-line" class="dim"></div>
  </section>
  <section id="session" data-tab="session">
    <div id="session-body"></div>
  </section>
${panel("deliveries", "Alert deliveries", "activity")}
${panel("events", "Recent events", "activity")}
${panel("channels", "Notifier channels", "activity")}
  <section id="knobs" data-tab="knobs">
    <h2>Knobs <button type="button" id="reload-knobs" class="small">reload</button></h2>
    <div id="knobs-body"></div>
  </section>
</main>
`;

export interface AdminPage {
  html: string;
  csp: string;
}

/** The page and the CSP that allows exactly its own style block and script. */
export function adminPage(scriptPath = "/admin/app.js"): AdminPage {
  const styleHash = createHash("sha256").update(STYLE).digest("base64");
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>stallguard admin</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
<script type="module" src="${scriptPath}"></script>
</head>
<body>${BODY}</body>
</html>
`;
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'sha256-${styleHash}'`,
    "connect-src 'self'",
    "img-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join("; ");
  return { html, csp };
}
