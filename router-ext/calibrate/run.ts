// `stallguard calibrate` without the argument parser: load sessions, replay
// them through the core, print the table / JSON / HTML, and sweep thresholds
// over labelled sessions. Returns the exit code; never throws.
import { readFileSync, writeFileSync } from "node:fs";
import { parseDuration, policyFromConfig, type ReplayResult, replay } from "../../shared/index.ts";
import { loadConfig } from "./config.ts";
import { type Labels, labelCounts, mergeLabels, parseLabels } from "./labels.ts";
import { createProgress } from "./progress.ts";
import { renderHtml, renderSummary, renderSweep, renderTable, toJsonDoc } from "./render.ts";
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
  config?: string | null;
  grid?: string | null;
  timeline?: boolean;
  quiet?: boolean;
  top?: number;
}

export interface Io {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  now: () => number;
}

export class UsageError extends Error {}

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
}

export async function runCalibrate(opts: CalibrateOptions, io: Io): Promise<CalibrateOutcome> {
  const progress = createProgress(io.stderr, { quiet: opts.quiet });
  const fail = (message: string, code = 2): CalibrateOutcome => {
    progress.done();
    io.stderr.write(`stallguard calibrate: ${message}\n`);
    return { code, results: [], sweep: null, labels: {} };
  };
  try {
    const { config, sources: configSources } = loadConfig({ configPath: opts.config ?? null, env: io.env });
    const policy = policyFromConfig(config);
    const filters: Filters = {
      since: opts.since ? parseSince(opts.since, io.now()) : null,
      sessionIds: opts.sessions?.filter(Boolean) ?? [],
    };
    const axes = opts.sweep ? (opts.grid ? parseGrid(opts.grid) : DEFAULT_AXES) : null;

    const sessions: SourceSession[] = [];
    let labels: Labels = {};
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
      });
      sessions.push(...r.sessions);
      for (const w of r.warnings) progress.note(`warning: ${w}`);
      sourceNames.push(path);
    }
    if (exportsGiven.length) {
      const r = loadExports(exportsGiven);
      sessions.push(...applyFilters(r.sessions, filters));
      labels = mergeLabels(labels, r.labels);
      for (const w of r.warnings) progress.note(`warning: ${w}`);
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
      labels = mergeLabels(labels, parseLabels(doc));
    }
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

    let sweep: SweepResult | null = null;
    if (axes) {
      const ids = sessions.map((s) => s.id);
      const counts = labelCounts(labels, ids);
      if (!counts.loop || !counts.healthy) {
        return fail(
          `--sweep needs at least one session labelled "loop" and one labelled "healthy" among those loaded (have ${counts.loop} loop, ${counts.healthy} healthy): pass --labels FILE`,
        );
      }
      const prepared = prepare(sessions, policy);
      const candidates = gridOf(axes);
      sweep = runSweep(prepared, labels, policy, candidates, (d, t) => progress.step("sweeping", d, t));
      progress.done();
    }

    if (opts.json) {
      io.stdout.write(`${JSON.stringify(toJsonDoc(results, { timeline: opts.timeline, sweep }), null, 2)}\n`);
    } else {
      io.stdout.write(`${renderTable(results, labels)}\n${renderSummary(results)}\n`);
      if (sweep) io.stdout.write(`\n${renderSweep(sweep, opts.top ?? 10)}\n`);
    }
    if (opts.html) {
      writeFileSync(opts.html, renderHtml(results, { labels, sweep, sources: sourceNames }));
      progress.note(`wrote ${opts.html}`);
    }
    return { code: 0, results, sweep, labels };
  } catch (err) {
    return fail((err as Error).message, err instanceof UsageError ? 2 : 1);
  }
}
