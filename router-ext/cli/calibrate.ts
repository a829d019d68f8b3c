// `stallguard calibrate`: replay opencode history through the detection core
// and propose thresholds. The work is in router-ext/calibrate/run.ts.
import { defineCommand } from "citty";
import { listFlag, repeated } from "../calibrate/args.ts";
import { runCalibrate } from "../calibrate/run.ts";
import { stringArg, switchArg } from "./args.ts";
import type { CliIo } from "./io.ts";

export default defineCommand({
  meta: {
    name: "calibrate",
    description:
      "Replay opencode sessions through the detector: a verdict per session, an HTML timeline report, an audit of labelled sessions (with both halves of a fixed split), each threshold's margins, and a threshold sweep.",
  },
  args: {
    db: stringArg(
      "opencode's database (opencode.db) to replay, read-only; not stallguard's own store (serve --db). Default: ~/.local/share/opencode/opencode.db",
    ),
    copy: switchArg("Copy the database with SQLite's backup API first and read the copy"),
    export: stringArg(
      "opencode export JSON files, directories of them, or a quoted glob ('dir/ses_*.json'): --export a.json b.json dir/ (also repeat or comma-separate)",
    ),
    server: stringArg("A live opencode server, e.g. http://127.0.0.1:4096"),
    since: stringArg("Only sessions updated since: ISO date, epoch ms, or a duration (7d)"),
    session: stringArg("Only this session and its sub-agents (repeat or comma-separate)"),
    json: switchArg('Print {"sessions": [...]} to stdout instead of the table'),
    timeline: switchArg("Include the per-call timeline in --json"),
    html: stringArg("Write a self-contained HTML report to this file"),
    sweep: switchArg("Sweep thresholds over labelled sessions and propose the best"),
    labels: stringArg(
      'JSON {"<session id>": "loop" | "healthy" | "unclear"}: prints an audit per labelled set (labels.json beside exports counts too)',
    ),
    "labels-from": stringArg(
      "The admin's marks as labels: the router's URL (GET /api/labels; admin token from STALLGUARD_ADMIN_TOKEN or ~/.config/stallguard/admin.token) or a file exported from the admin page; proposes thresholds",
    ),
    split: switchArg(
      "Audit both halves of a fixed split (sha256 of the session id, first byte even: A, odd: B)",
    ),
    margins: switchArg(
      "Per threshold, one at a time: the nearest value that flags a healthy run or misses a loop",
    ),
    grid: stringArg('Sweep grid, e.g. "stall_turns=2,4,6;dup_warn=0.3,0.4"'),
    top: stringArg("Sweep rows to print (default 10)"),
    config: stringArg("Extra config YAML layered over config/config.yaml"),
    quiet: switchArg("No progress on stderr"),
    jobs: stringArg(
      "Threads that read and judge --db's session trees: this one and N-1 worker threads (default: the cores, at most 8; 1: this one alone). A small db, or one run with --labels, --sweep or --margins, is read in one thread",
    ),
  },
  async run({ args, rawArgs, data }): Promise<number> {
    const io = data as CliIo;
    const top = args.top === undefined ? undefined : Number(args.top);
    // Words after --export are its values; any other positional word is a mistake, said, not dropped.
    const exportsArg = listFlag(rawArgs, "export", args._ ?? [], args.export);
    if (exportsArg.stray.length) {
      io.stderr.write(
        `stallguard calibrate: unexpected argument(s): ${exportsArg.stray.join(" ")} (export files and directories go right after --export)\n`,
      );
      return 2;
    }
    const result = await runCalibrate(
      {
        db: typeof args.db === "string" ? args.db : null,
        copy: Boolean(args.copy),
        exports: exportsArg.values,
        server: typeof args.server === "string" ? args.server : null,
        since: typeof args.since === "string" ? args.since : null,
        sessions: repeated(rawArgs, "session", args.session),
        json: Boolean(args.json),
        timeline: Boolean(args.timeline),
        html: typeof args.html === "string" ? args.html : null,
        sweep: Boolean(args.sweep),
        labels: typeof args.labels === "string" ? args.labels : null,
        labelsFrom: typeof args["labels-from"] === "string" ? args["labels-from"] : null,
        grid: typeof args.grid === "string" ? args.grid : null,
        config: typeof args.config === "string" ? args.config : null,
        quiet: Boolean(args.quiet),
        split: Boolean(args.split),
        margins: Boolean(args.margins),
        jobs: typeof args.jobs === "string" ? args.jobs : null,
        ...(top !== undefined && Number.isInteger(top) && top > 0 ? { top } : {}),
      },
      { stdout: io.stdout, stderr: io.stderr, env: io.env, now: io.now },
    );
    return result.code;
  },
});
