// `stallguard calibrate` without the argument parser: load sessions, replay
// them through the core, print the table / JSON / HTML, audit labelled sets
// (both halves of the fixed split with --split), scan each threshold's
// margins, and sweep thresholds over labelled sessions. Returns the exit
// code; never throws.
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseDuration, policyFromConfig, type ReplayResult, replay } from "../../shared/index.ts";
import { UsageError } from "./args.ts";
import { type Audit, audit, toExplain } from "./audit.ts";
import { loadConfig } from "./config.ts";
import { explainSessions } from "./explain.ts";
import { renderHtml } from "./html-report.ts";
import { type LabelSet, type Labels, labelCounts, mergeSets, parseLabelSet } from "./labels.ts";
import { loadLabelsFrom } from "./labels-from.ts";
import { type KnobMargin, margins as scanMargins } from "./margins.ts";
import { createProgress } from "./progress.ts";
import { renderAudit, renderMargins, renderSummary, renderSweep, renderTable, toJsonDoc } from "./render.ts";
import {
  applyFilters,
  defaultOpencodeDb,
  type Filters,
  loadExports,
  loadOpencodeDb,
  loadServer,
  type SourceSession,
} from "./sources.ts";
import { DEFAULT_AXES, gridOf, parseGrid, prepare, runSweep, type SweepResult } from "./sweep.ts";

export interface CalibrateOptions {
  db?: string | null;
  copy?: boolean;
  exports?: string[];
  server?: string | null;
  since?: string | null;
  sessions?: string[];
  json?: boolean;
  html?: string | null;
  sweep?: boolean;
  labels?: string | null;
  /** The router's URL (its marks via GET /api/labels) or a labels file exported from the admin page. */
  labelsFrom?: string | null;
  config?: string | null;
  grid?: string | null;
  timeline?: boolean;
  quiet?: boolean;
  top?: number;
  /** Report both halves of the fixed split (sha256 of the session id) beside each set's figures. */
  split?: boolean;
  /** Scan each threshold one at a time for its nearest false flag and missed loop. */
  margins?: boolean;
}

export interface Io {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  now: () => number;
}

export { UsageError };

/** `--since`: epoch ms, an ISO date/time, or a duration back from now ("7d", "12h"). */
export function parseSince(value: string, now: number): number {
  const v = value.trim();
  if (/^\d{10,}$/.test(v)) return Number(v);
  const ago = parseDuration(v);
  if (ago !== undefined) return now - ago;
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new UsageError(`--since: not a date, epoch ms or duration: ${value}`);
  return t;
}

export interface CalibrateOutcome {
  code: number;
  results: ReplayResult[];
  sweep: SweepResult | null;
  labels: Labels;
  audit: Audit | null;
  margins: KnobMargin[] | null;
}

export async function runCalibrate(opts: CalibrateOptions, io: Io): Promise<CalibrateOutcome> {
  const progress = createProgress(io.stderr, { quiet: opts.quiet });
  // What was skipped or could not be read is said even with --quiet (that silences progress only).
  const say = (line: string) => (opts.quiet ? io.stderr.write(`${line}\n`) : progress.note(line));
  const fail = (message: string, code = 2): CalibrateOutcome => {
    progress.done();
    io.stderr.write(`stallguard calibrate: ${message}\n`);
    return { code, results: [], sweep: null, labels: {}, audit: null, margins: null };
  };
  try {
    const { config, sources: configSources } = loadConfig({ configPath: opts.config ?? null, env: io.env });
    const policy = policyFromConfig(config);
    const filters: Filters = {
      since: opts.since ? parseSince(opts.since, io.now()) : null,
      sessionIds: opts.sessions?.filter(Boolean) ?? [],
    };
    let axes = opts.sweep ? (opts.grid ? parseGrid(opts.grid) : DEFAULT_AXES) : null;

    const sessions: SourceSession[] = [];
    const sets: LabelSet[] = [];
    const sourceNames: string[] = [];
    const t0 = performance.now();
    const exportsGiven = (opts.exports ?? []).filter(Boolean);
    const useDb = opts.db || (!exportsGiven.length && !opts.server);
    if (useDb) {
      const path = opts.db || defaultOpencodeDb(io.env);
      const r = await loadOpencodeDb(path, {
        ...filters,
        copy: opts.copy ?? false,
        onProgress: (d, t) => progress.step("reading sessions", d, t),
      }).catch((err: unknown) => {
        // --db is opencode's database here, not stallguard's own store (serve --db).
        throw new Error(`--db (opencode's database, not stallguard's own store): ${(err as Error).message}`);
      });
      sessions.push(...r.sessions);
      for (const w of r.warnings) say(`warning: ${w}`);
      sourceNames.push(path);
    }
    if (exportsGiven.length) {
      const r = loadExports(exportsGiven);
      sessions.push(...applyFilters(r.sessions, filters));
      sets.push(...r.sets);
      for (const w of r.warnings) say(`warning: ${w}`);
      for (const w of r.ignored) say(`ignored: ${w}`);
      for (const set of r.sets) progress.note(`labels: ${set.name}`);
      sourceNames.push(...exportsGiven);
    }
    if (opts.server) {
      const r = await loadServer(opts.server, {
        ...filters,
        onProgress: (d, t) => progress.step("fetching sessions", d, t),
      });
      sessions.push(...r.sessions);
      sourceNames.push(opts.server);
    }
    if (opts.labels) {
      let doc: unknown;
      try {
        doc = JSON.parse(readFileSync(opts.labels, "utf8"));
      } catch (err) {
        throw new UsageError(`--labels: cannot read ${opts.labels}: ${(err as Error).message}`);
      }
      // the same file already read beside the exports is one set, not two
      const same = sets.findIndex((x) => resolve(x.name) === resolve(opts.labels as string));
      const set = parseLabelSet(opts.labels, doc);
      if (same >= 0) sets[same] = set;
      else sets.push(set);
    }
    if (opts.labelsFrom) {
      const set = await loadLabelsFrom(opts.labelsFrom, io.env);
      sets.push(set);
      progress.note(`labels: ${Object.keys(set.labels).length} mark(s) from ${opts.labelsFrom}`);
    }
    const labels = mergeSets(sets);
    progress.done();
    const loadMs = performance.now() - t0;
    progress.note(
      `stallguard calibrate: ${sessions.length} session(s) from ${sourceNames.join(", ")} in ${Math.round(loadMs)} ms (config: ${configSources.join(" + ") || "built-in defaults"})`,
    );

    const t1 = performance.now();
    const results = replay(sessions, policy, { timeline: Boolean(opts.html || opts.timeline) });
    const calls = results.reduce((n, r) => n + r.calls, 0);
    const replayMs = performance.now() - t1;
    progress.note(
      `replayed ${calls} tool call(s) in ${Math.round(replayMs)} ms (${replayMs > 0 ? Math.round(calls / (replayMs / 1000)) : calls} calls/s)`,
    );

    const counts = labelCounts(
      labels,
      sessions.map((x) => x.id),
    );
    const needLabels = (flag: string) =>
      fail(
        `${flag} needs at least one session labelled "loop" and one labelled "healthy" among those loaded (have ${counts.loop} loop, ${counts.healthy} healthy): pass --labels FILE`,
      );
    // The marks are for proposing thresholds: --labels-from sweeps when they allow it, and says why not.
    if (opts.labelsFrom && !axes) {
      if (counts.loop && counts.healthy) axes = opts.grid ? parseGrid(opts.grid) : DEFAULT_AXES;
      else
        say(
          `--labels-from: ${counts.healthy} marked healthy (false alarm) and ${counts.loop} marked loop (confirmed loop) among the sessions loaded; proposing thresholds needs at least one of each (mark any session in the admin page)`,
        );
    }
    if (axes && (!counts.loop || !counts.healthy)) return needLabels("--sweep");
    if (opts.margins && (!counts.loop || !counts.healthy)) return needLabels("--margins");
    if (opts.split && !sets.length)
      return fail(
        "--split needs labelled sessions: pass --labels FILE or an export directory with labels.json",
      );

    const audited = sets.length
      ? audit(sets, results, explainSessions(sessions, policy, toExplain(results, sets)), policy.thresholds, {
          split: opts.split ?? false,
        })
      : null;

    const prepared = axes || opts.margins ? prepare(sessions, policy) : null;
    let margins: KnobMargin[] | null = null;
    let marginsMs = 0;
    if (opts.margins && prepared) {
      const t2 = performance.now();
      margins = scanMargins(prepared, labels, policy, undefined, (d, t) => progress.step("margins", d, t));
      marginsMs = performance.now() - t2;
      progress.done();
    }

    let sweep: SweepResult | null = null;
    if (axes && prepared) {
      const candidates = gridOf(axes);
      sweep = runSweep(prepared, labels, policy, candidates, (d, t) => progress.step("sweeping", d, t));
      progress.done();
    }

    if (opts.json) {
      io.stdout.write(
        `${JSON.stringify(toJsonDoc(results, { timeline: opts.timeline, sweep, audit: audited, margins }), null, 2)}\n`,
      );
    } else {
      io.stdout.write(`${renderTable(results, labels)}\n${renderSummary(results)}\n`);
      if (audited) io.stdout.write(`\n${renderAudit(audited)}\n`);
      if (margins)
        io.stdout.write(
          `\n${renderMargins(margins, {
            loops: counts.loop,
            healthy: counts.healthy,
            trees: prepared?.trees.length ?? 0,
            ms: marginsMs,
          })}\n`,
        );
      if (sweep) io.stdout.write(`\n${renderSweep(sweep, opts.top ?? 10)}\n`);
    }
    if (opts.html) {
      writeFileSync(opts.html, renderHtml(results, { labels, sweep, sources: sourceNames }));
      progress.note(`wrote ${opts.html}`);
    }
    return { code: 0, results, sweep, labels, audit: audited, margins };
  } catch (err) {
    return fail((err as Error).message, err instanceof UsageError ? 2 : 1);
  }
}
