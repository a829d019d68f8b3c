// `stallguard calibrate` without the argument parser: load sessions, replay
// them through the core, print the table / JSON / HTML, audit labelled sets
// (both halves of the fixed split with --split), scan each threshold's
// margins, and sweep thresholds over labelled sessions. Returns the exit
// code; never throws.
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import {
  type Config,
  observeOptions,
  type Policy,
  parseDuration,
  policyFromConfig,
  type ReplayResult,
  replay,
} from "../../shared/index.ts";
import { jobsOf, UsageError } from "./args.ts";
import { type Audit, audit, toExplain } from "./audit.ts";
import { loadConfig } from "./config.ts";
import { explainSessions } from "./explain.ts";
import { renderHtml } from "./html-report.ts";
import { type LabelSet, type Labels, labelCounts, mergeSets, parseLabelSet } from "./labels.ts";
import { loadLabelsFrom } from "./labels-from.ts";
import { type KnobMargin, margins as scanMargins } from "./margins.ts";
import { createProgress } from "./progress.ts";
import { renderAudit, renderMargins, renderSummary, renderSweep, renderTable, toJsonDoc } from "./render.ts";
import { replayDb } from "./replay-workers.ts";
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
  /** Worker threads for --db (a number or its text; default: the cores, at most 8; 1: none). */
  jobs?: number | string | null;
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

export interface CalibrateResult {
  code: number;
  results: ReplayResult[];
  sweep: SweepResult | null;
  labels: Labels;
  audit: Audit | null;
  margins: KnobMargin[] | null;
}

type Progress = ReturnType<typeof createProgress>;

/** What runCalibrate's steps share: the options, the output and how to say a line. */
interface Run {
  opts: CalibrateOptions;
  io: Io;
  progress: Progress;
  /** What was skipped or could not be read is said even with --quiet (that silences progress only). */
  say: (line: string) => void;
}

interface Loaded {
  sessions: SourceSession[];
  sets: LabelSet[];
  sourceNames: string[];
  /** The database's verdicts when it was judged as it was read (no sessions then). */
  replayed: ReplayResult[] | null;
}

/**
 * The sessions from opencode's database (the default), exports and a server,
 * with the label sets exports carry. The database's sessions are turned into
 * observations as they are read, with the policy's options (no stored records held).
 */
async function loadSessions(
  r: Run,
  filters: Filters,
  policy: Policy,
  run: { config: Config; jobs: number },
): Promise<Loaded> {
  const { opts, io, progress, say } = r;
  const out: Loaded = { sessions: [], sets: [], sourceNames: [], replayed: null };
  const exportsGiven = (opts.exports ?? []).filter(Boolean);
  const useDb = opts.db || (!exportsGiven.length && !opts.server);
  if (useDb) {
    const path = opts.db || defaultOpencodeDb(io.env);
    const wrap = (err: unknown): never => {
      // --db is opencode's database here, not stallguard's own store (serve --db).
      throw new Error(`--db (opencode's database, not stallguard's own store): ${(err as Error).message}`);
    };
    if (judgedAsRead(opts)) {
      const judged = await replayAsRead(r, path, filters, run).catch(wrap);
      out.replayed = judged.results;
      for (const w of judged.warnings) say(`warning: ${w}`);
    } else {
      const db = await loadOpencodeDb(path, {
        ...filters,
        copy: opts.copy ?? false,
        onProgress: (d, t) => progress.step("reading sessions", d, t),
        observe: observeOptions(policy),
      }).catch(wrap);
      out.sessions.push(...db.sessions);
      for (const w of db.warnings) say(`warning: ${w}`);
    }
    out.sourceNames.push(path);
  }
  if (exportsGiven.length) {
    const ex = loadExports(exportsGiven);
    out.sessions.push(...applyFilters(ex.sessions, filters));
    out.sets.push(...ex.sets);
    for (const w of ex.warnings) say(`warning: ${w}`);
    for (const w of ex.ignored) say(`ignored: ${w}`);
    for (const set of ex.sets) progress.note(`labels: ${set.name}`);
    out.sourceNames.push(...exportsGiven);
  }
  if (opts.server) {
    const sv = await loadServer(opts.server, {
      ...filters,
      onProgress: (d, t) => progress.step("fetching sessions", d, t),
    });
    out.sessions.push(...sv.sessions);
    out.sourceNames.push(opts.server);
  }
  return out;
}

/**
 * The database is read and judged tree by tree (across worker threads when
 * it is large enough) when it is the only source and nothing needs its
 * sessions afterwards: labels, the sweep and the margins judge them again,
 * so they read every session first.
 */
function judgedAsRead(opts: CalibrateOptions): boolean {
  const exportsGiven = (opts.exports ?? []).some(Boolean);
  const needSessions = opts.labels || opts.labelsFrom || opts.sweep || opts.margins || opts.split;
  return !exportsGiven && !opts.server && !needSessions;
}

/** The database's verdicts: across up to `jobs` threads, or in this one alone when it is too small for them. */
async function replayAsRead(
  r: Run,
  path: string,
  filters: Filters,
  run: { config: Config; jobs: number },
): Promise<{ results: ReplayResult[]; warnings: string[] }> {
  const t0 = performance.now();
  const { jobs, config } = run;
  const done = await replayDb(path, {
    ...filters,
    jobs,
    config,
    copy: r.opts.copy ?? false,
    timeline: Boolean(r.opts.html || r.opts.timeline),
    onProgress: (d, t) => r.progress.step("reading and judging sessions", d, t),
  });
  const calls = done.results.reduce((n, x) => n + x.calls, 0);
  const where =
    done.workers > 1
      ? `across ${done.workers} threads (--jobs ${jobs}: this one and ${done.workers - 1} worker thread(s))`
      : "tree by tree in this thread";
  r.progress.done();
  r.progress.note(
    `read and replayed ${calls} tool call(s) in ${Math.round(performance.now() - t0)} ms ${where}`,
  );
  return done;
}

/** Adds --labels (replacing the same file read beside the exports) and --labels-from to `sets`. */
async function addLabelSets(r: Run, sets: LabelSet[]): Promise<void> {
  const { opts } = r;
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
    const set = await loadLabelsFrom(opts.labelsFrom, r.io.env);
    sets.push(set);
    r.progress.note(`labels: ${Object.keys(set.labels).length} mark(s) from ${opts.labelsFrom}`);
  }
}

/** Replays every session through the core, with the time it took. */
function replayTimed(r: Run, sessions: SourceSession[], policy: Policy): ReplayResult[] {
  const t1 = performance.now();
  const results = replay(sessions, policy, { timeline: Boolean(r.opts.html || r.opts.timeline) });
  const calls = results.reduce((n, x) => n + x.calls, 0);
  const replayMs = performance.now() - t1;
  r.progress.note(
    `replayed ${calls} tool call(s) in ${Math.round(replayMs)} ms (${replayMs > 0 ? Math.round(calls / (replayMs / 1000)) : calls} calls/s)`,
  );
  return results;
}

type Counts = ReturnType<typeof labelCounts>;
type Axes = ReturnType<typeof parseGrid>;

const gridAxes = (opts: CalibrateOptions): Axes => (opts.grid ? parseGrid(opts.grid) : DEFAULT_AXES);

/**
 * The sweep's axes, or the message why the labels cannot serve what was asked:
 * --sweep and --margins need a loop and a healthy session, --split a label set.
 * --labels-from sweeps when its marks allow it, and says why not.
 */
function sweepAxes(
  r: Run,
  asked: Axes | null,
  counts: Counts,
  hasSets: boolean,
): { ok: true; axes: Axes | null } | { ok: false; message: string } {
  const { opts } = r;
  let axes = asked;
  const both = counts.loop > 0 && counts.healthy > 0;
  if (opts.labelsFrom && !axes) {
    if (both) axes = gridAxes(opts);
    else
      r.say(
        `--labels-from: ${counts.healthy} marked healthy (false alarm) and ${counts.loop} marked loop (confirmed loop) among the sessions loaded; proposing thresholds needs at least one of each (mark any session in the admin page)`,
      );
  }
  const needLabels = (flag: string) => ({
    ok: false as const,
    message: `${flag} needs at least one session labelled "loop" and one labelled "healthy" among those loaded (have ${counts.loop} loop, ${counts.healthy} healthy): pass --labels FILE`,
  });
  if (axes && !both) return needLabels("--sweep");
  if (opts.margins && !both) return needLabels("--margins");
  if (opts.split && !hasSets)
    return {
      ok: false,
      message: "--split needs labelled sessions: pass --labels FILE or an export directory with labels.json",
    };
  return { ok: true, axes };
}

interface Analysis {
  margins: KnobMargin[] | null;
  marginsMs: number;
  sweep: SweepResult | null;
  trees: number;
}

/** The margins scan and the sweep, over the sessions prepared once for both. */
function analyse(
  r: Run,
  sessions: SourceSession[],
  labels: Labels,
  policy: Policy,
  axes: Axes | null,
): Analysis {
  const { progress } = r;
  const prepared = axes || r.opts.margins ? prepare(sessions, policy) : null;
  const out: Analysis = { margins: null, marginsMs: 0, sweep: null, trees: prepared?.trees.length ?? 0 };
  if (r.opts.margins && prepared) {
    const t2 = performance.now();
    out.margins = scanMargins(prepared, labels, policy, undefined, (d, t) => progress.step("margins", d, t));
    out.marginsMs = performance.now() - t2;
    progress.done();
  }
  if (axes && prepared) {
    out.sweep = runSweep(prepared, labels, policy, gridOf(axes), (d, t) => progress.step("sweeping", d, t));
    progress.done();
  }
  return out;
}

/** The JSON document or the text report on stdout, and the HTML file with --html. */
function writeReport(
  r: Run,
  out: {
    results: ReplayResult[];
    labels: Labels;
    audited: Audit | null;
    counts: Counts;
    sourceNames: string[];
  },
  a: Analysis,
): void {
  const { opts, io } = r;
  const { results, labels, audited } = out;
  const { sweep, margins } = a;
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
          loops: out.counts.loop,
          healthy: out.counts.healthy,
          trees: a.trees,
          ms: a.marginsMs,
        })}\n`,
      );
    if (sweep) io.stdout.write(`\n${renderSweep(sweep, opts.top ?? 10)}\n`);
  }
  if (opts.html) {
    writeFileSync(opts.html, renderHtml(results, { labels, sweep, sources: out.sourceNames }));
    r.progress.note(`wrote ${opts.html}`);
  }
}

export async function runCalibrate(opts: CalibrateOptions, io: Io): Promise<CalibrateResult> {
  const progress = createProgress(io.stderr, { quiet: opts.quiet });
  const say = (line: string) => (opts.quiet ? io.stderr.write(`${line}\n`) : progress.note(line));
  const r: Run = { opts, io, progress, say };
  const fail = (message: string, code = 2): CalibrateResult => {
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
    // A bad --grid is a usage error before anything is loaded.
    const asked = opts.sweep ? gridAxes(opts) : null;
    const jobs = jobsOf(opts.jobs);
    const t0 = performance.now();
    const { sessions, sets, sourceNames, replayed } = await loadSessions(r, filters, policy, {
      config,
      jobs,
    });
    await addLabelSets(r, sets);
    const labels = mergeSets(sets);
    progress.done();
    progress.note(
      `stallguard calibrate: ${(replayed ?? sessions).length} session(s) from ${sourceNames.join(", ")} in ${Math.round(performance.now() - t0)} ms (config: ${configSources.join(" + ") || "built-in defaults"})`,
    );
    const results = replayed ?? replayTimed(r, sessions, policy);
    const counts = labelCounts(
      labels,
      results.map((x) => x.id),
    );
    const axes = sweepAxes(r, asked, counts, sets.length > 0);
    if (!axes.ok) return fail(axes.message);
    const audited = sets.length
      ? audit(sets, results, explainSessions(sessions, policy, toExplain(results, sets)), policy.thresholds, {
          split: opts.split ?? false,
        })
      : null;
    const a = analyse(r, sessions, labels, policy, axes.axes);
    writeReport(r, { results, labels, audited, counts, sourceNames }, a);
    return { code: 0, results, sweep: a.sweep, labels, audit: audited, margins: a.margins };
  } catch (err) {
    return fail((err as Error).message, err instanceof UsageError ? 2 : 1);
  }
}
